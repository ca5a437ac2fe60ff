package dsn

import (
	"flag"
	"github.com/zkpresto/zkpresto/strategy"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite the DSN key tables of docs/dsn.md from the key table")

// docPath is the page that lists the DSN keys, relative to this package.
const docPath = "../docs/dsn.md"

// docBegin and docEnd delimit the part of docs/dsn.md written from the
// key table for section.
func docBegin(section string) string {
	return "<!-- dsn keys: " + section + " (written from dsn/keys.go and the strategies' registry: go test ./dsn/ -run TestDocsDSNKeys -update) -->"
}

func docEnd(section string) string { return "<!-- end dsn keys: " + section + " -->" }

// builtinStrategyKeys are the option keys of the built-in strategies,
// read before any test registers a strategy of its own.
var builtinStrategyKeys = strategy.Keys()

// strategyOptions are the built-in strategies that take options, with
// their keys, read as builtinStrategyKeys is.
var strategyOptions = func() (out []struct {
	name string
	keys []strategy.ConfigKey
}) {
	for _, name := range strategy.Names() {
		if keys := strategy.ConfigKeys(name); keys != nil {
			out = append(out, struct {
				name string
				keys []strategy.ConfigKey
			}{name, keys})
		}
	}
	return out
}()

// sectionStrategies is docs/dsn.md's list of the strategies' own keys,
// written from the strategies' registry.
const sectionStrategies = "strategies"

// strategiesSection renders docs/dsn.md's list of each strategy's keys.
func strategiesSection() string {
	var b strings.Builder
	for i, s := range strategyOptions {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("### `" + s.name + "`\n\n| key | default | meaning |\n|---|---|---|\n")
		for _, k := range s.keys {
			b.WriteString("| `" + k.Name + "` | " + k.Default + " | " + k.Doc + " |\n")
		}
	}
	return b.String()
}

// docSection renders docs/dsn.md's list of the keys of section.
func docSection(section string) string {
	if section == sectionStrategies {
		return strategiesSection()
	}
	var b strings.Builder
	b.WriteString("| key | default | meaning |\n|---|---|---|\n")
	quote := func(name string) string { return "`" + name + "`" }
	var pending []*keySpec
	flush := func() {
		if len(pending) == 0 {
			return
		}
		var cells []string
		for _, k := range pending {
			cell := quote(k.name)
			if len(k.aliases) > 0 {
				aliases := make([]string, len(k.aliases))
				for i, a := range k.aliases {
					aliases[i] = quote(a)
				}
				cell += " (alias " + strings.Join(aliases, ", ") + ")"
			}
			cells = append(cells, cell)
		}
		b.WriteString("| " + strings.Join(cells, ", ") + " | " + pending[0].def + " | " + pending[0].doc + " |\n")
		pending = nil
	}
	summarised := false
	for _, k := range keyTable {
		if k.section != section {
			flush()
			if section == sectionMain && k.section == sectionSecurity && !summarised {
				// The strategies' own keys, in their own section.
				var options []string
				for _, sk := range builtinStrategyKeys {
					options = append(options, quote(sk.Name))
				}
				b.WriteString("| " + strings.Join(options, ", ") + " | — | the options of the strategy `zooKeeperStrategy` names, each strategy's own; see [Strategy options](#strategy-options) |\n")
				// The main table points to the security section's own table.
				var names []string
				for _, s := range keyTable {
					if s.section == sectionSecurity {
						names = append(names, quote(s.name))
					}
				}
				b.WriteString("| " + strings.Join(names, ", ") + " | — | ZooKeeper authentication and TLS; see [ZooKeeper security](#zookeeper-security) |\n")
				summarised = true
			}
			continue
		}
		if len(pending) > 0 && (pending[0].def != k.def || pending[0].doc != k.doc) {
			flush()
		}
		pending = append(pending, k)
	}
	flush()
	if section != sectionMain {
		return b.String()
	}
	b.WriteString("| anything else | — | a Presto session property, as the Presto Go client does; its name must be one Presto can have " +
		"(`[a-z_][a-z0-9_]*`, optionally `catalog.property`), and a near miss of a key above (the same but for case, or 2 edits away; " +
		"1 for a key of up to 5 letters) is refused with the key to write instead |\n\n")
	var client []string
	for _, k := range keyTable {
		if k.kind == kindClient && k.section == sectionMain {
			client = append(client, quote(k.name))
		}
	}
	b.WriteString("The Presto client keys (" + strings.Join(client, ", ") + ") match exactly, as the Presto client matches them;\n" +
		"the other keys above are ours and match case-insensitively, aliases included. The Presto JDBC driver's other keys are\n" +
		"in [JDBC URLs](#jdbc-urls).\n")
	return b.String()
}

// TestDocsDSNKeys checks that docs/dsn.md lists the DSN keys as the key
// table does; with -update it rewrites the page's lists instead.
func TestDocsDSNKeys(t *testing.T) {
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, section := range []string{sectionMain, sectionStrategies, sectionSecurity, sectionJDBC} {
		begin, end := docBegin(section), docEnd(section)
		i := strings.Index(text, begin)
		j := strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("docs/dsn.md lacks the lines\n%s\n%s\naround its list of the %s DSN keys", begin, end, section)
		}
		got := text[i+len(begin) : j]
		want := "\n" + docSection(section)
		if got == want {
			continue
		}
		if *updateDocs {
			text = text[:i+len(begin)] + want + text[j:]
			continue
		}
		t.Errorf("docs/dsn.md's list of the %s DSN keys differs from the key table; run\n"+
			"\tgo test ./dsn/ -run TestDocsDSNKeys -update\nor paste between its markers:\n%s", section, want)
	}
	if *updateDocs && text != string(data) {
		if err := os.WriteFile(docPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDSNKeyTable checks the table itself: every key parses and formats,
// and no spelling belongs to two keys.
func TestDSNKeyTable(t *testing.T) {
	spellings := make(map[string]string)
	for _, k := range keyTable {
		if k.name == "" || k.parse == nil || k.format == nil || k.doc == "" || k.def == "" {
			t.Errorf("key %q lacks a name, parse, format, doc or default", k.name)
		}
		if k.section != sectionMain && k.section != sectionSecurity && k.section != sectionJDBC {
			t.Errorf("key %q has an unknown docs section %q", k.name, k.section)
		}
		if k.secret && (!k.opaque || k.redact == nil) {
			t.Errorf("secret key %q must be opaque and have a redact function", k.name)
		}
		for _, s := range append([]string{k.name}, k.aliases...) {
			lower := strings.ToLower(s)
			if other, dup := spellings[lower]; dup {
				t.Errorf("spelling %q of key %q is also key %q", s, k.name, other)
			}
			spellings[lower] = k.name
			if got := lookupKey(s); got != k {
				t.Errorf("lookupKey(%q) does not find key %q", s, k.name)
			}
		}
	}
}
