package coordinator

import (
	"crypto/rand"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// ident matches a Presto identifier, plain or double-quoted.
const ident = `(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_@$:]*)`

// The session statements the simulator understands. Each is matched against the whole
// statement text, without a trailing semicolon.
var (
	setAuthStmt      = regexp.MustCompile(`(?is)^SET\s+SESSION\s+AUTHORIZATION\s+(.+)$`)
	resetAuthStmt    = regexp.MustCompile(`(?is)^RESET\s+SESSION\s+AUTHORIZATION$`)
	setSessionStmt   = regexp.MustCompile(`(?is)^SET\s+SESSION\s+(` + ident + `(?:\.` + ident + `)?)\s*=\s*(.+)$`)
	resetSessionStmt = regexp.MustCompile(`(?is)^RESET\s+SESSION\s+(` + ident + `(?:\.` + ident + `)?)$`)
	useStmt          = regexp.MustCompile(`(?is)^USE\s+(` + ident + `)(?:\s*\.\s*(` + ident + `))?$`)
	setPathStmt      = regexp.MustCompile(`(?is)^SET\s+PATH\s+(.+)$`)
	setRoleStmt      = regexp.MustCompile(`(?is)^SET\s+ROLE\s+(` + ident + `)(?:\s+IN\s+(` + ident + `))?$`)
	prepareStmt      = regexp.MustCompile(`(?is)^PREPARE\s+(` + ident + `)\s+FROM\s+(.+)$`)
	deallocateStmt   = regexp.MustCompile(`(?is)^DEALLOCATE\s+PREPARE\s+(` + ident + `)$`)
	executeStmt      = regexp.MustCompile(`(?is)^EXECUTE\s+(` + ident + `)(?:\s+USING\s+(.+))?$`)
	startTxnStmt     = regexp.MustCompile(`(?is)^START\s+TRANSACTION\b`)
	endTxnStmt       = regexp.MustCompile(`(?is)^(COMMIT|ROLLBACK)(?:\s+WORK)?$`)

	sessionNameParts = regexp.MustCompile(`^(` + ident + `)(?:\.(` + ident + `))?$`)
)

// unquote returns an identifier's name: a quoted one as written, a plain one in lower case,
// as Presto folds unquoted identifiers.
func unquote(id string) string {
	if len(id) >= 2 && id[0] == '"' && id[len(id)-1] == '"' {
		return strings.ReplaceAll(id[1:len(id)-1], `""`, `"`)
	}
	return strings.ToLower(id)
}

// literal returns the text of a SET SESSION value: a string literal without its quotes,
// anything else (numbers, booleans) as written.
func literal(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

// done is the plan of a session statement that succeeds, sending the given headers.
func done(updateType string, kv ...string) plan {
	h := make(http.Header)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return plan{kind: sessionStatement, updateType: updateType, header: h}
}

// planStatement decides what a submission does: a session statement, EXECUTE of a prepared
// statement, or whatever its markers say. prepared holds the client's prepared statements.
func (c *Coordinator) planStatement(req Request, prepared map[string]string) plan {
	sql := strings.TrimSpace(req.SQL)
	sql = strings.TrimSpace(strings.TrimSuffix(sql, ";"))
	open, aborted := c.transactionState(req.TransactionID)
	if req.TransactionID != "" && !open {
		return failPlan(errUnknownTransaction, "UNKNOWN_TRANSACTION", "Unknown transaction ID: "+req.TransactionID+". Possibly expired? Commands ignored until end of transaction block")
	}
	if aborted {
		// Seen on Trino 476 and PrestoDB 0.287 alike: ROLLBACK ends an
		// aborted transaction, COMMIT fails and ends it too, and anything
		// else fails and leaves it (interop/realservers,
		// TestDifferentialAbortedTransaction).
		m := endTxnStmt.FindStringSubmatch(sql)
		switch {
		case m != nil && strings.EqualFold(m[1], "ROLLBACK"):
		case m != nil:
			p := failPlan(errTransactionAborted, "TRANSACTION_ALREADY_ABORTED", "Current transaction has already been aborted")
			p.endTxn = req.TransactionID
			return p
		default:
			return failPlan(errTransactionAborted, "TRANSACTION_ALREADY_ABORTED", "Current transaction is aborted, commands ignored until end of transaction block")
		}
	}
	var p plan
	var g []string // the submatches of the case that matched
	match := func(re *regexp.Regexp) bool {
		g = re.FindStringSubmatch(sql)
		return g != nil
	}
	switch {
	case match(setAuthStmt):
		if c.flavour != Trino {
			return failPlan(errNotSupported, "NOT_SUPPORTED", "SET SESSION AUTHORIZATION is not supported")
		}
		p = done("SET SESSION AUTHORIZATION", "Set-Authorization-User", literal(g[1]))
	case match(resetAuthStmt):
		if c.flavour != Trino {
			return failPlan(errNotSupported, "NOT_SUPPORTED", "RESET SESSION AUTHORIZATION is not supported")
		}
		p = done("RESET SESSION AUTHORIZATION", "Reset-Authorization-User", "true")
	case match(setSessionStmt):
		p = done("SET SESSION", "Set-Session", sessionName(g[1])+"="+url.QueryEscape(literal(g[2])))
	case match(resetSessionStmt):
		p = done("RESET SESSION", "Clear-Session", sessionName(g[1]))
	case match(useStmt):
		if g[2] == "" {
			if req.Catalog == "" {
				return failPlan(errGenericUser, "GENERIC_USER_ERROR", "Catalog must be specified when session catalog is not set")
			}
			p = done("USE", "Set-Schema", unquote(g[1]))
		} else {
			p = done("USE", "Set-Catalog", unquote(g[1]), "Set-Schema", unquote(g[2]))
		}
	case match(setPathStmt):
		p = done("SET PATH", "Set-Path", strings.TrimSpace(g[1]))
	case match(setRoleStmt):
		catalog := req.Catalog
		if g[2] != "" {
			catalog = unquote(g[2])
		}
		if catalog == "" {
			catalog = "system"
		}
		role := "ROLE{" + unquote(g[1]) + "}"
		if r := strings.ToUpper(g[1]); r == "ALL" || r == "NONE" {
			role = r
		}
		p = done("SET ROLE", "Set-Role", catalog+"="+url.QueryEscape(role))
	case match(prepareStmt):
		p = done("PREPARE", "Added-Prepare", unquote(g[1])+"="+url.QueryEscape(strings.TrimSpace(g[2])))
	case match(deallocateStmt):
		name := unquote(g[1])
		if _, ok := lookupPrepared(prepared, name); !ok {
			return failPlan(errNotFound, "NOT_FOUND", "Prepared statement not found: "+name)
		}
		p = done("DEALLOCATE", "Deallocated-Prepare", name)
	case match(executeStmt):
		name := unquote(g[1])
		text, ok := lookupPrepared(prepared, name)
		if !ok {
			return failPlan(errNotFound, "NOT_FOUND", "Prepared statement not found: "+name)
		}
		args := splitArgs(g[2])
		bound, want := bind(text, args)
		if want != len(args) {
			return failPlan(errGenericUser, "GENERIC_USER_ERROR", fmt.Sprintf("Incorrect number of parameters: expected %d but found %d", want, len(args)))
		}
		return planMarkers(bound)
	case match(startTxnStmt):
		if !req.TransactionSupport {
			return failPlan(errIncompatibleClient, "INCOMPATIBLE_CLIENT", "Client does not support transactions")
		}
		if req.TransactionID != "" {
			return failPlan(errNotSupported, "NOT_SUPPORTED", "Nested transactions not supported")
		}
		id := newTransactionID()
		p = done("START TRANSACTION", "Started-Transaction-Id", id)
		p.beginTxn = id
	case match(endTxnStmt):
		if req.TransactionID == "" {
			return failPlan(errNotInTransaction, "NOT_IN_TRANSACTION", "No transaction in progress")
		}
		p = done(strings.ToUpper(g[1]), "Clear-Transaction-Id", "true")
		p.endTxn = req.TransactionID
	default:
		return planMarkers(req.SQL)
	}
	p.sql = req.SQL
	return p
}

// sessionName is a session property name with each part unquoted.
func sessionName(name string) string {
	parts := sessionNameParts.FindStringSubmatch(name)
	if parts == nil {
		return name
	}
	if parts[2] == "" {
		return unquote(parts[1])
	}
	return unquote(parts[1]) + "." + unquote(parts[2])
}

// lookupPrepared finds a prepared statement by name, also in another case: clients differ
// in whether they fold the names they send.
func lookupPrepared(prepared map[string]string, name string) (string, bool) {
	if text, ok := prepared[name]; ok {
		return text, true
	}
	for n, text := range prepared {
		if strings.EqualFold(n, name) {
			return text, true
		}
	}
	return "", false
}

// parsePrepared decodes Prepared-Statement header lines (name=urlencoded-sql, comma
// separated) into a map and the names in the order they came.
func parsePrepared(lines []string) (map[string]string, []string) {
	var m map[string]string
	var names []string
	for name, value := range headerPairs(lines) {
		if decoded, err := url.QueryUnescape(name); err == nil {
			name = decoded
		}
		if m == nil {
			m = make(map[string]string)
		}
		if _, seen := m[name]; !seen {
			names = append(names, name)
		}
		m[name] = value
	}
	return m, names
}

// headerPairs yields the name=value pairs of header lines that list them comma separated,
// as Session and Prepared-Statement do, in order: the name as written, the value
// URL-decoded (left as written when it does not decode). Pairs without a name are skipped.
func headerPairs(lines []string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, line := range lines {
			for pair := range strings.SplitSeq(line, ",") {
				name, value, _ := strings.Cut(strings.TrimSpace(pair), "=")
				if name == "" {
					continue
				}
				if decoded, err := url.QueryUnescape(value); err == nil {
					value = decoded
				}
				if !yield(name, value) {
					return
				}
			}
		}
	}
}

// splitArgs splits EXECUTE's USING list at the commas outside string literals and brackets.
func splitArgs(list string) []string {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	var args []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(list); i++ {
		switch ch := list[i]; {
		case ch == '\'':
			quoted = !quoted
		case quoted:
		case ch == '(' || ch == '[':
			depth++
		case ch == ')' || ch == ']':
			depth--
		case ch == ',' && depth == 0:
			args = append(args, strings.TrimSpace(list[start:i]))
			start = i + 1
		}
	}
	return append(args, strings.TrimSpace(list[start:]))
}

// bind puts the arguments in place of the ? placeholders outside string literals and
// returns how many placeholders there were.
func bind(text string, args []string) (string, int) {
	var b strings.Builder
	quoted, used := false, 0
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case ch == '\'':
			quoted = !quoted
		case ch == '?' && !quoted:
			if used < len(args) {
				b.WriteString(args[used])
			}
			used++
			continue
		}
		b.WriteByte(ch)
	}
	return b.String(), used
}

// newTransactionID returns a random UUID, the form Presto gives transaction ids.
func newTransactionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
