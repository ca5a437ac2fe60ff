package realservers

import (
	"testing"
)

// A statement that names no zone runs in its coordinator's JVM zone (the
// prediction, seen here on both flavours), so the driver sends the
// client's own: whichever coordinator the strategy picks, current_timezone()
// is the client's.
func TestStatementZoneIsTheClientsOnEveryCoordinator(t *testing.T) {
	eachFlavour(t, func(t *testing.T, f *flavourFleet) {
		for i, s := range f.servers {
			res, err := s.Query(ctx(t), "SELECT current_timezone()")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Rows[0][0], jvmZones[i]; got != want {
				t.Fatalf("%s without a zone header runs in %v, want its JVM's %s", s.Name(), got, want)
			}
		}
		for _, c := range []struct {
			tz, dsn, want string
		}{
			{"Europe/Paris", "", "Europe/Paris"},
			// What a container's /etc/localtime names; both servers
			// call it UTC.
			{"Etc/UTC", "", "UTC"},
			// The driver's fallback when the local zone has no name.
			{"Europe/Paris", "&timezone=%2B05:30", "+05:30"},
		} {
			t.Run(c.tz+c.dsn, func(t *testing.T) {
				t.Setenv("TZ", c.tz)
				db := open(t, f, ";zooKeeperStrategy=poll?user=alice"+c.dsn)
				seen := map[string]bool{}
				for range 6 {
					var node, zone string
					if err := db.QueryRowContext(ctx(t), "SELECT node_id, current_timezone() FROM system.runtime.nodes").Scan(&node, &zone); err != nil {
						t.Fatal(err)
					}
					if zone != c.want {
						t.Fatalf("%s ran the statement in %s, want %s", node, zone, c.want)
					}
					seen[node] = true
				}
				if len(seen) != 2 {
					t.Fatalf("poll used only %v", seen)
				}
			})
		}
	})
}
