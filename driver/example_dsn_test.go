package driver_test

import (
	"fmt"
	"time"

	"github.com/zkpresto/zkpresto/driver"
)

func ExampleParseDSN() {
	cfg, err := driver.ParseDSN("jdbc:presto://zk1,zk2:2182/hive/default" +
		";serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=/prod/presto;serverSelectStrategy=poll" +
		"?user=alice&password=s3cr%3Bt&query_max_run_time=1h")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ensemble:", cfg.Ensemble())
	fmt.Println("path:", cfg.ZooKeeperPath())
	fmt.Println("strategy:", cfg.Strategy)
	fmt.Println("catalog:", cfg.Catalog, "schema:", cfg.Schema)
	fmt.Println("user:", cfg.User, "session:", cfg.SessionProperties)
	fmt.Println(cfg) // String redacts the password

	_, err = driver.ParseDSN("presto://zk1:99999;serviceDiscoveryMode=zooKeeper")
	fmt.Println(err)
	// Output:
	// ensemble: zk1:2181,zk2:2182
	// path: /prod/presto
	// strategy: poll
	// catalog: hive schema: default
	// user: alice session: map[query_max_run_time:1h]
	// presto://zk1:2181,zk2:2182/hive/default;serviceDiscoveryMode=zooKeeper;zooKeeperNamespace=prod/presto;zooKeeperStrategy=poll?password=xxxxx&query_max_run_time=1h&user=alice
	// dsn: bad port "99999" in host "zk1:99999"
}

func ExampleConfig_FormatDSN() {
	cfg := driver.NewConfig()
	cfg.Hosts = []string{"10.0.0.1:8080", "10.0.0.2:8080"}
	cfg.Catalog = "tpch"
	cfg.Strategy = "weighted"
	cfg.Weights = map[string]int{"10.0.0.1:8080": 3, "10.0.0.2:8080": 1}
	cfg.ConnectTimeout = 2 * time.Second
	cfg.User = "etl"
	cfg.ClientTags = []string{"nightly", "batch"}

	dsn := cfg.FormatDSN()
	fmt.Println(dsn)

	back, err := driver.ParseDSN(dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.FormatDSN() == dsn, back.Weights["10.0.0.1:8080"], back.ClientTags)
	// Output:
	// presto://10.0.0.1:8080,10.0.0.2:8080/tpch;weights=10.0.0.1:8080=3,10.0.0.2:8080=1;zooKeeperConnectTimeout=2s;zooKeeperStrategy=weighted?client_tags=nightly,batch&user=etl
	// true 3 [nightly batch]
}
