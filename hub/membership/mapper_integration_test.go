package membership

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// TestMapperDiscoversOnlyWhatIsUsed maps the kinds the hub uses on a member against a real API
// server: each is mapped with its scope, a kind the member does not serve is "no match", and
// discovery asked for the groups and for the used group versions only, never for aggregated
// discovery (every kind the member serves).
func TestMapperDiscoversOnlyWhatIsUsed(t *testing.T) {
	g := NewWithT(t)
	env := envtest.Start(t)
	rec := &requestLog{}
	hc, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	hc.Transport = rec.wrap(hc.Transport)
	mapper, err := NewMapper(env.Config, hc)
	g.Expect(err).NotTo(HaveOccurred())

	for _, tc := range []struct {
		gvk      schema.GroupVersionKind
		resource string
		scope    meta.RESTScopeName
	}{
		{corev1.SchemeGroupVersion.WithKind("Namespace"), "namespaces", meta.RESTScopeNameRoot},
		{rayv1.GroupVersion.WithKind("RayService"), "rayservices", meta.RESTScopeNameNamespace},
		{fleetv1alpha1.GroupVersion.WithKind("ClusterReport"), "clusterreports", meta.RESTScopeNameRoot},
	} {
		m, mapErr := mapper.RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
		g.Expect(mapErr).NotTo(HaveOccurred(), "%s", tc.gvk)
		g.Expect(m.Resource.Resource).To(Equal(tc.resource))
		g.Expect(m.Scope.Name()).To(Equal(tc.scope), "%s", tc.gvk)
	}
	_, err = mapper.RESTMapping(schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"}, "v1")
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "a kind the member does not serve: %v", err)

	g.Expect(rec.aggregated()).To(BeEmpty(), "requests that offered aggregated discovery")
	// The group version asked for and not served is looked for too (and not found).
	g.Expect(rec.paths()).To(ConsistOf("/api", "/apis", "/api/v1", "/apis/ray.io/v1", "/apis/fleet.rayfleet.io/v1alpha1",
		"/apis/gateway.networking.k8s.io/v1"))
}

// requestLog records the requests' paths, and which of them offered aggregated discovery, as
// the API server received them.
type requestLog struct {
	mu       sync.Mutex
	got      []string
	offering []string
}

func (l *requestLog) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		if !slices.Contains(l.got, req.URL.Path) {
			l.got = append(l.got, req.URL.Path)
		}
		if strings.Contains(req.Header.Get("Accept"), "apidiscovery.k8s.io") {
			l.offering = append(l.offering, req.URL.Path)
		}
		l.mu.Unlock()
		return next.RoundTrip(req)
	})
}

func (l *requestLog) paths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func (l *requestLog) aggregated() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.offering)
}
