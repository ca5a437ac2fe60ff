package registrar_test

import (
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/registrar"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/zkserver"
)

// Trino answers its JMX resource only to a request that names a user,
// authentication or not (401 from server/security/InsecureAuthenticator.java,
// seen on the real 476), and the simulator does the same. A registrar
// given no --load-user reads as DefaultLoadUser, so it publishes the load;
// it used to send no user, and published none.
func TestRegistrarReadsTrinoLoadWithoutAConfiguredUser(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino, Name: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	zks := zkserver.StartT(t)
	h := &harness{t: t, zk: zks}
	h.start(registrar.Config{
		Servers:      []string{zks.Addr()},
		Namespace:    "trinoload",
		AdvertiseURI: c.URL(),
		Interval:     50 * time.Millisecond,
		Load:         &registrar.LoadPublishing{Source: registrar.LoadFromTrino, Interval: 10 * time.Millisecond},
		Logger:       testLogger(t),
	})
	eventually(t, "a load figure published", func() bool {
		st := h.reg.Status()
		return st.Registered && st.LoadWrites > 0 && !st.Load.ReadAt.IsZero()
	})
}
