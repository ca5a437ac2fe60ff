package realservers

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// pythonClients is the python of the virtual environment
// scripts/install-python-clients.sh makes; its absence fails the test.
func pythonClients(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("ZKPRESTO_PYTHON_CLIENTS")
	if venv == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		venv = filepath.Join(cache, "zkpresto", "python-clients")
	}
	python := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(filepath.Join(venv, "zkpresto-requirements.txt")); err != nil {
		t.Fatalf("the Python clients are not installed in %s (run scripts/install-python-clients.sh, which make test-deps runs): %v", venv, err)
	}
	return python
}

// pythonProbe is what testdata/python_probe.py prints.
type pythonProbe struct {
	Count    int      `json:"count"`
	Bound    string   `json:"bound"`
	Orders   int      `json:"orders"`
	Ordered  bool     `json:"ordered"`
	Tables   []string `json:"tables"`
	Columns  []string `json:"columns"`
	Selected []string `json:"selected"`
}

func runPythonProbe(t *testing.T, python, client, addr string) pythonProbe {
	t.Helper()
	u, err := url.Parse("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, python, "testdata/python_probe.py", client, u.Hostname(), u.Port())
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("python_probe.py %s on %s: %v\n%s", client, addr, err, stderr)
	}
	var p pythonProbe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("python_probe.py printed %q: %v", out, err)
	}
	return p
}

// trino-python-client (DB-API, and its SQLAlchemy dialect as Superset uses
// it: the table and column lists, a select() with a bound parameter) and
// presto-python-client, through the gateway to the real servers of their
// flavour, see what they see straight on a server.
func TestPythonClientsThroughTheGateway(t *testing.T) {
	python := pythonClients(t)
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		client := "presto"
		if f.flavour == coordinator.Trino {
			client = "trino"
		}
		gw, err := url.Parse(startGateway(t, f))
		if err != nil {
			t.Fatal(err)
		}
		through := runPythonProbe(t, python, client, gw.Host)
		direct := runPythonProbe(t, python, client, f.servers[0].Addr())
		if through.Count != 25 || through.Orders != 15000 || !through.Ordered {
			t.Errorf("%s through the gateway: %+v, want 25 nations and 15000 orders in order", client, through)
		}
		if f.flavour == coordinator.Trino {
			if through.Bound != "CANADA" || !slices.Contains(through.Tables, "nation") ||
				!slices.Equal(through.Columns, []string{"nationkey", "name", "regionkey", "comment"}) ||
				!slices.Equal(through.Selected, []string{"ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"}) {
				t.Errorf("trino through the gateway: %+v", through)
			}
		}
		a, _ := json.Marshal(through)
		b, _ := json.Marshal(direct)
		if string(a) != string(b) {
			t.Errorf("%s through the gateway saw %s, straight on a server %s", client, a, b)
		}
	})
}
