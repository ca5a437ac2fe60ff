package driver

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Transactions whole. A transaction lives in the Presto client's session,
// whose transaction id travels with every request, on the one coordinator
// that started it: BeginTx pins the connection there, Commit and Rollback
// unpin it. Two ways would break that, and both are closed here.

// errTransactionControl refuses START TRANSACTION, COMMIT and ROLLBACK run
// as statements: the session would hold a transaction id the driver does
// not know of, and the next statement, picked for another coordinator,
// would fail with UNKNOWN_TRANSACTION there (or one on the same
// coordinator would run inside a transaction nobody commits).
var errTransactionControl = errors.New("driver: START TRANSACTION, COMMIT and ROLLBACK are not run as statements: use db.BeginTx, tx.Commit and tx.Rollback, which keep the transaction on its coordinator")

// refuseTransactionControl returns errTransactionControl, before any I/O,
// for a statement that starts or ends a transaction.
func refuseTransactionControl(query string) error {
	words := leadingWords(query, 2)
	if txControlOf(words) != NoTxControl {
		return fmt.Errorf("%w (the statement begins %q)", errTransactionControl, strings.Join(words, " "))
	}
	return nil
}

// txControlOf classifies a statement by its first two words (leadingWords):
// the one rule that both refusing such statements and
// ParseTransactionControl follow, so the two cannot disagree.
func txControlOf(words []string) TxControl {
	switch {
	case len(words) == 0:
		return NoTxControl
	case words[0] == "COMMIT":
		return Commit
	case words[0] == "ROLLBACK":
		return Rollback
	case words[0] == "START" && len(words) > 1 && words[1] == "TRANSACTION":
		return StartTransaction
	}
	return NoTxControl
}

// leadingWords returns up to n words at the start of query, after white
// space and comments, upper-cased by foldKeyword; a word is a run of
// letters (of any script) and underscores.
func leadingWords(query string, n int) []string {
	words, _ := leadingWordsEnd(query, n)
	return words
}

// leadingWordsEnd is leadingWords, and where in query the last word ends.
func leadingWordsEnd(query string, n int) ([]string, int) {
	var words []string
	i, end := 0, 0
	for i < len(query) && len(words) < n {
		switch c := query[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(query[i:], "--"):
			// Trino's SIMPLE_COMMENT ends at a carriage return too.
			j := strings.IndexAny(query[i:], "\r\n")
			if j < 0 {
				return words, end
			}
			i += j + 1
		case strings.HasPrefix(query[i:], "/*"):
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				return words, end
			}
			i += j + 4
		default:
			j := i
			for j < len(query) {
				r, size := utf8.DecodeRuneInString(query[j:])
				if r != '_' && !unicode.IsLetter(r) {
					break
				}
				j += size
			}
			if j == i {
				return words, end
			}
			words = append(words, foldKeyword(query[i:j]))
			i, end = j, j
		}
	}
	return words, end
}

// foldKeyword upper-cases s as the servers do before they match keywords,
// and more: a statement the driver refuses must be refused however it is
// spelled. PrestoDB upper-cases each character with Java's
// Character.toUpperCase (its parser's CaseInsensitiveStream), which makes
// 'ſ' (U+017F) an S and 'ı' (U+0131) an I; Trino's lexer is generated
// case-insensitive. So a letter becomes the ASCII letter its upper case,
// lower case or Unicode simple case folding is (the Kelvin sign K, U+212A,
// folds to K), and the ligatures Java's String.toUpperCase expands to ASCII
// letters ('ﬆ' to ST) become those; any other letter stays as it is and
// matches no keyword.
func foldKeyword(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteString(foldKeywordRune(r))
	}
	return b.String()
}

// upperExpansions are the letters whose full upper case (Unicode's
// SpecialCasing, which Java's String.toUpperCase applies) is ASCII letters
// only.
var upperExpansions = map[rune]string{
	'ß': "SS", 'ﬀ': "FF", 'ﬁ': "FI", 'ﬂ': "FL", 'ﬃ': "FFI", 'ﬄ': "FFL", 'ﬅ': "ST", 'ﬆ': "ST",
}

// foldKeywordRune is foldKeyword of one letter.
func foldKeywordRune(r rune) string {
	if r < utf8.RuneSelf {
		return strings.ToUpper(string(r))
	}
	if s, ok := upperExpansions[r]; ok {
		return s
	}
	for _, c := range []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)} {
		if c < utf8.RuneSelf {
			return strings.ToUpper(string(c))
		}
	}
	for c := unicode.SimpleFold(r); c != r; c = unicode.SimpleFold(c) {
		if c < utf8.RuneSelf {
			return strings.ToUpper(string(c))
		}
	}
	return string(unicode.ToUpper(r))
}

// beginFailed retires the connection whose START TRANSACTION failed: the
// coordinator may have started the transaction and its id may be in the
// session already (a failure after the answer's headers), so the pool
// must not hand the connection out again. IsValid then says so, and
// database/sql closes it when BeginTx returns.
func (c *Conn) beginFailed(err error) error {
	c.broken.Store(true)
	return fmt.Errorf("starting a transaction: %w", err)
}

// attemptTxn is the part of an attempt that notes a transaction started
// by the coordinator.
type attemptTxn struct {
	startedTransaction atomic.Bool
}

// noteTransaction records in a whether resp starts a transaction (Presto's
// and Trino's Started-Transaction-Id header).
func noteTransaction(resp *http.Response, a *attempt) {
	if resp.Header.Get("X-Presto-Started-Transaction-Id") != "" || resp.Header.Get("X-Trino-Started-Transaction-Id") != "" {
		a.startedTransaction.Store(true)
	}
}

// retireUnpinnedTransaction retires the connection when a statement other
// than BeginTx's started a transaction (one refuseTransactionControl could
// not see: EXECUTE of a prepared START TRANSACTION, say): the session holds
// a transaction id no pin keeps on its coordinator, so the pool must not
// hand the connection out again.
func (c *Conn) retireUnpinnedTransaction(a *attempt) {
	if a != nil && a.startedTransaction.Load() && !c.beginning {
		c.broken.Store(true)
	}
}

// TxControl says what a transaction-control statement asks for (see
// ParseTransactionControl).
type TxControl int

// The transaction-control statements.
const (
	// NoTxControl is any other statement.
	NoTxControl TxControl = iota
	// StartTransaction is START TRANSACTION [mode [, mode]...].
	StartTransaction
	// Commit is COMMIT [WORK].
	Commit
	// Rollback is ROLLBACK [WORK].
	Rollback
)

// isolationLevels are Presto's isolation levels and their words after
// ISOLATION LEVEL: the one table BeginTx renders from and
// ParseTransactionControl reads back.
var isolationLevels = map[sql.IsolationLevel]string{
	sql.LevelReadUncommitted: "READ UNCOMMITTED",
	sql.LevelReadCommitted:   "READ COMMITTED",
	sql.LevelRepeatableRead:  "REPEATABLE READ",
	sql.LevelSerializable:    "SERIALIZABLE",
}

// isolationLevelNamed returns the isolation level whose words are words.
func isolationLevelNamed(words string) (sql.IsolationLevel, bool) {
	for level, w := range isolationLevels {
		if w == words {
			return level, true
		}
	}
	return sql.LevelDefault, false
}

// ParseTransactionControl reports whether query starts or ends a
// transaction, which the driver runs only through BeginTx, Commit and
// Rollback, and for START TRANSACTION the options its modes name
// (ISOLATION LEVEL ..., READ ONLY, READ WRITE), the reverse of what
// BeginTx sends. A program that takes SQL from its users, such as a shell,
// runs them that way. A START TRANSACTION with a mode Presto does not
// know is an error naming it.
func ParseTransactionControl(query string) (TxControl, *sql.TxOptions, error) {
	words, end := leadingWordsEnd(query, 2)
	if kind := txControlOf(words); kind != StartTransaction {
		return kind, nil, nil
	}
	// What follows the two words: the modes, separated by commas.
	rest := strings.TrimRight(strings.TrimSpace(query[end:]), ";")
	opts := &sql.TxOptions{}
	if strings.TrimSpace(rest) == "" {
		return StartTransaction, opts, nil
	}
	for _, mode := range strings.Split(rest, ",") {
		m := foldKeyword(strings.Join(strings.Fields(mode), " "))
		switch {
		case m == "READ ONLY":
			opts.ReadOnly = true
		case m == "READ WRITE":
			opts.ReadOnly = false
		case strings.HasPrefix(m, "ISOLATION LEVEL "):
			level, ok := isolationLevelNamed(strings.TrimPrefix(m, "ISOLATION LEVEL "))
			if !ok {
				return StartTransaction, nil, fmt.Errorf("driver: START TRANSACTION: unknown isolation level %q", strings.TrimSpace(strings.TrimPrefix(m, "ISOLATION LEVEL ")))
			}
			opts.Isolation = level
		default:
			return StartTransaction, nil, fmt.Errorf("driver: START TRANSACTION: unknown mode %q", strings.TrimSpace(mode))
		}
	}
	return StartTransaction, opts, nil
}
