package chaos_test

import (
	"fmt"
	"time"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/chaos"
)

// The fault schedule of a short run: a crash every second, each coordinator
// down for 1.5 s, a starting phase every 3 s, no reset phase and one
// ZooKeeper leader kill.
// The crash due at 2 s is skipped: two of the four coordinators are already
// unavailable then (Quick allows two).
func ExamplePlan() {
	opts := chaos.Quick()
	opts.Duration = 4 * time.Second
	opts.CrashEvery, opts.MinDown, opts.MaxDown = time.Second, 1500*time.Millisecond, 1500*time.Millisecond
	opts.DeregisterAfter = -1
	opts.StartingEvery, opts.StartingFor = 3*time.Second, time.Second
	opts.ResetEvery = -1
	opts.LeaderKillEvery, opts.LeaderDownFor = 6*time.Second, 2*time.Second
	for _, e := range chaos.Plan(opts) {
		fmt.Println(e)
	}
	// Output:
	//       1s crash          c3
	//     1.5s starting       c1
	//     2.5s recover        c3
	//     2.5s started        c1
	//       3s crash          c4
	//       3s kill-zk-leader zookeeper
	//     4.5s recover        c4
	//       5s restart-zk     zookeeper
}
