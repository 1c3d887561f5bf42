//go:build e2e

package fleetray

import (
	"net/http"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/internal/requests"
	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
)

// Request pacing: one request every requestEvery, each given up after requestTimeout. Ray
// Serve answers in milliseconds, but on a 2-core machine shared with other tests (load average
// above 100 at times) an answer can take seconds; those are counted as slow, not as failed,
// since a lost request is what the rollout must prevent.
const (
	requestEvery   = 20 * time.Millisecond
	requestTimeout = 30 * time.Second
	slowAnswer     = 5 * time.Second
)

// served is who answered a request through the Gateway: the app's version, and the member
// whose load balancer forwarded it.
type served struct{ version, cluster string }

type (
	answer    = requests.Answer[served]
	requester = requests.Requester[served]
)

// gatewayRequests pace the requests through the Gateway and read the test app's answers.
var gatewayRequests = requests.Options[served]{Every: requestEvery, Timeout: requestTimeout, Decode: decodeServed}

// decodeServed reads the test app's answer and the member that forwarded it.
func decodeServed(header http.Header, body []byte) (served, error) {
	version, err := versionOf(body)
	return served{version: version, cluster: header.Get(loadbalancer.ClusterHeader)}, err
}

// startRequests starts sending requests to url until closed or the test ends.
func startRequests(t *testing.T, url string) *requester {
	return requests.Start(t, url, gatewayRequests)
}
