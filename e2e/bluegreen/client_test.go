//go:build e2e

package bluegreen

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/internal/requests"
	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
)

// Request pacing: one request every requestEvery, each given up after requestTimeout (a
// stand-in answers at once; a request that takes longer is a failure worth seeing).
const (
	requestEvery   = 20 * time.Millisecond
	requestTimeout = 2 * time.Second
)

type (
	answer    = requests.Answer[loadbalancer.Response]
	requester = requests.Requester[loadbalancer.Response]
)

// gatewayRequests pace the requests through the Gateway and read the stand-in's answers.
var gatewayRequests = requests.Options[loadbalancer.Response]{Every: requestEvery, Timeout: requestTimeout, Decode: decodeStandIn}

// decodeStandIn reads who answered a 200: the load balancer stand-in's cluster and revision.
func decodeStandIn(_ http.Header, body []byte) (loadbalancer.Response, error) {
	var from loadbalancer.Response
	if err := json.Unmarshal(body, &from); err != nil {
		return from, fmt.Errorf("a 200 whose body is not a stand-in's answer (%q): %w", body, err)
	}
	return from, nil
}

// startRequests starts sending requests to url until the test ends (or Close).
func startRequests(t *testing.T, url string) *requester {
	return requests.Start(t, url, gatewayRequests)
}

// probeGateway sends one request through the Gateway.
func probeGateway(ctx context.Context) answer {
	return requests.Get(ctx, gatewayURL(), gatewayRequests)
}

// tally counts answers by the cluster that gave them and by "cluster revision", leaving out
// failures.
type tally struct {
	total, failed int
	byCluster     map[string]int
	byRevision    map[string]int
}

// count tallies answers.
func count(answers []answer) tally {
	t := tally{total: len(answers), byCluster: map[string]int{}, byRevision: map[string]int{}}
	for _, a := range answers {
		if a.Failed() {
			t.failed++
			continue
		}
		t.byCluster[a.Value.Cluster]++
		t.byRevision[a.Value.Cluster+" "+a.Value.Revision]++
	}
	return t
}

// share is the fraction of the answered requests that cluster answered.
func (t tally) share(cluster string) float64 {
	answered := t.total - t.failed
	if answered == 0 {
		return 0
	}
	return float64(t.byCluster[cluster]) / float64(answered)
}

// String is the tally in one line.
func (t tally) String() string {
	parts := make([]string, 0, len(t.byRevision))
	for _, k := range slices.Sorted(maps.Keys(t.byRevision)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, t.byRevision[k]))
	}
	return fmt.Sprintf("%d requests, %d failed; %s", t.total, t.failed, strings.Join(parts, ", "))
}
