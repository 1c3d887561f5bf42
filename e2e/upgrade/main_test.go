//go:build e2e

package upgrade

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// serveIPs are the members' serve IPs, which the network namespace puts on its loopback
// interface and each member's load balancer stand-in listens on: the API server refuses
// loopback addresses in EndpointSlices, so the hub's backends need other addresses.
var serveIPs = map[string]string{memberUS: "10.99.0.1", memberEU: "10.99.0.2"}

// TestMain runs the package in a network namespace of its own (see
// localfleet.RunInNetworkNamespace), where Traefik reaches the members' serve IPs.
func TestMain(m *testing.M) {
	if !localfleet.InNetworkNamespace() {
		os.Exit(localfleet.RunInNetworkNamespace("e2e/upgrade", slices.Collect(maps.Values(serveIPs))))
	}
	os.Exit(m.Run())
}
