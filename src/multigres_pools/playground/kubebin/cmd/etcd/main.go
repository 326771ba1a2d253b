// Command etcd is the etcd server from the version the pinned Kubernetes release is tested with,
// used both as the API server's store and as the Multigres topology store in tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
