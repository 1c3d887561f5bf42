package membership

import (
	"net/http"
	"testing"

	"k8s.io/client-go/discovery"
)

func TestNoAggregatedDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name, accept, want string
	}{
		{"client-go's discovery offer keeps its legacy format", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer," +
			discovery.AcceptV2 + "," + discovery.AcceptV2Beta1 + "," + discovery.AcceptV1, discovery.AcceptV1},
		{"an offer of aggregated discovery alone becomes JSON", discovery.AcceptV2, "application/json"},
		{"a request for an object is left alone", "application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf,application/json"},
		{"no Accept header is left alone", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			rt := noAggregatedDiscovery{next: roundTripperFunc(func(req *http.Request) (*http.Response, error) {
				got = req.Header.Get("Accept")
				return &http.Response{StatusCode: http.StatusOK}, nil
			})}
			req, err := http.NewRequest(http.MethodGet, "https://member.example/apis", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if _, err := rt.RoundTrip(req); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Accept sent = %q, want %q", got, tc.want)
			}
			if req.Header.Get("Accept") != tc.accept {
				t.Errorf("the caller's request was changed: Accept %q", req.Header.Get("Accept"))
			}
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
