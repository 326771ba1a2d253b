// Command coredns is CoreDNS v1.15.0 with only the plugins the real node's cluster DNS uses, so
// that it builds quickly and pulls in no cloud SDKs. The node runs it as a host process serving
// cluster.local from the kube-apiserver through an out-of-cluster kubeconfig.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins a Corefile may use; each registers itself with caddy on import. bind keeps the
	// server on the addresses we give it (without it CoreDNS listens on every interface).
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// directives is the execution order of our plugins: the same relative order as upstream's
// plugin.cfg (a request passes through them top to bottom), whatever order a Corefile lists them.
// Only these may appear in a Corefile. Plugins that ours import (debug, dnstap, metadata,
// prometheus, transfer) still register themselves and show in `coredns -plugins`, but caddy
// refuses them as unknown directives.
var directives = []string{
	"bind",
	"ready",
	"health",
	"errors",
	"log",
	"cache",
	"kubernetes",
	"forward",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
