package membership

import (
	"errors"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewMapper is the REST mapper of a member cluster (a cluster.Options.MapperProvider):
// controller-runtime's lazy mapper, kept from aggregated discovery.
//
// Offered aggregated discovery, that mapper's first lookup loads the mappings of every kind the
// member serves, and keeps them: 263 KB a member on a bare API server, more on a cluster with
// many CRDs (26 MB at 100 bare members, a tenth of the hub's heap at 10,000 RayServices). The
// hub uses a few kinds on a member. Without the offer the mapper reads the list of groups, then
// the resources of only the group versions the hub uses: 75 KB a member.
func NewMapper(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	if hc == nil {
		return nil, errors.New("member REST mapper: no HTTP client")
	}
	lazy := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	lazy.Transport = noAggregatedDiscovery{next: next}
	return apiutil.NewDynamicRESTMapper(c, &lazy)
}

// noAggregatedDiscovery removes the aggregated-discovery media types from a request's Accept
// header, so that the API server answers a discovery request with the list of groups alone.
type noAggregatedDiscovery struct {
	next http.RoundTripper
}

func (t noAggregatedDiscovery) RoundTrip(req *http.Request) (*http.Response, error) {
	accept := req.Header.Get("Accept")
	if !strings.Contains(accept, aggregatedDiscovery) {
		return t.next.RoundTrip(req)
	}
	var kept []string
	for r := range strings.SplitSeq(accept, ",") {
		if !strings.Contains(r, aggregatedDiscovery) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		kept = []string{runtime.ContentTypeJSON}
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept", strings.Join(kept, ","))
	return t.next.RoundTrip(req)
}

// aggregatedDiscovery marks the media types of aggregated discovery (apidiscovery.k8s.io).
const aggregatedDiscovery = "g=apidiscovery.k8s.io"
