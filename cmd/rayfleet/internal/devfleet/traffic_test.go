package devfleet

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

func TestLoadTrafficSample(t *testing.T) {
	s, err := LoadTrafficSample()
	if err != nil {
		t.Fatal(err)
	}
	p := s.Policy.Spec
	if s.Policy.Namespace != "demo" || s.Policy.Name != "blue-green" || p.Clusters == nil || *p.Clusters != 1 {
		t.Errorf("PlacementPolicy = %s/%s clusters %v, want demo/blue-green on one cluster (the other is green)",
			s.Policy.Namespace, s.Policy.Name, p.Clusters)
	}
	if p.Rollout == nil || p.Rollout.Type != fleetv1alpha1.RolloutBlueGreen || p.Rollout.BlueGreen == nil {
		t.Fatalf("rollout = %+v, want BlueGreen with its tuning", p.Rollout)
	}
	if bg := p.Rollout.BlueGreen; deref(bg.StepPercent) != 50 || deref(bg.IntervalSeconds) != 10 || deref(bg.RetireAfterSeconds) != 30 {
		t.Errorf("blueGreen = step %v interval %v retire %v, want 50, 10, 30", bg.StepPercent, bg.IntervalSeconds, bg.RetireAfterSeconds)
	}
	if p.Traffic == nil || p.Traffic.Cluster != "" || p.Traffic.ParentRef.Namespace != localfleet.GatewayNamespace ||
		p.Traffic.ParentRef.Name != localfleet.GatewayName || p.Traffic.PathPrefix != "/" {
		t.Errorf("traffic = %+v, want the hub's Gateway %s/%s at /", p.Traffic, localfleet.GatewayNamespace, localfleet.GatewayName)
	}
	if s.Service.Namespace != "demo" || s.Service.Name != "berry" || s.Service.Annotations[labels.PlacementPolicy] != "blue-green" {
		t.Errorf("RayService = %s/%s annotations %v, want demo/berry placed by blue-green",
			s.Service.Namespace, s.Service.Name, s.Service.Annotations)
	}
	if svc := s.Service.Spec.ServeService; svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("serveService = %+v, want type LoadBalancer", svc)
	}
	if !bytes.Equal(s.source, trafficSampleYAML) {
		t.Error("the sample does not keep its source for the state directory")
	}
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestSamples(t *testing.T) {
	l := Layout{Dir: "/state"}
	tests := []struct {
		name    string
		traffic bool
		want    []string
	}{
		{name: "the sample alone", want: []string{"demo/fruit " + l.SampleFile()}},
		{name: "with traffic", traffic: true, want: []string{"demo/fruit " + l.SampleFile(), "demo/berry " + l.TrafficSampleFile()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples, err := Config{Traffic: tt.traffic}.samples(l)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range samples {
				got = append(got, s.Namespace()+"/"+s.Service.Name+" "+s.path)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("samples = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFleetOptionsTraffic(t *testing.T) {
	c := Config{BasePort: 20000, Root: "/clone", K8sBin: "/clone/bin/k8s", Bin: "/clone/bin"}
	l := Layout{Dir: "/state"}
	if opts := c.fleetOptions(l, nil); opts.Traffic != nil || len(opts.HubCRDDirs) != 1 {
		t.Errorf("without traffic: Traffic %+v, hub CRDs %v; want none and the hub chart's", opts.Traffic, opts.HubCRDDirs)
	}
	c.Traffic = true
	opts := c.fleetOptions(l, nil)
	want := &localfleet.TrafficOptions{ServeIPs: map[string]string{"us": "10.99.0.1", "eu": "10.99.0.2"}, GatewayPort: 20003}
	if !reflect.DeepEqual(opts.Traffic, want) {
		t.Errorf("Traffic = %+v, want %+v", opts.Traffic, want)
	}
	if wantDirs := []string{filepath.Join("/clone", hubCRDDir), filepath.Join("/clone", gatewayCRDDir)}; !reflect.DeepEqual(opts.HubCRDDirs, wantDirs) {
		t.Errorf("hub CRDs = %v, want %v", opts.HubCRDDirs, wantDirs)
	}
	st := c.initialState(l)
	if st.Traffic == nil || st.Traffic.GatewayURL != "http://127.0.0.1:20003" || st.Traffic.ServeIPs["eu"] != "10.99.0.2" {
		t.Errorf("state's traffic = %+v, want the gateway URL and serve IPs", st.Traffic)
	}
}

func TestPrintTraffic(t *testing.T) {
	st := &State{
		Clusters: []ClusterInfo{{Name: HubName, Kubeconfig: "/state/kubeconfigs/hub.kubeconfig"}},
		Traffic:  &TrafficInfo{GatewayURL: "http://127.0.0.1:16446", ServeIPs: serveIPs()},
	}
	var out bytes.Buffer
	printTraffic(&out, st, "kubectl")
	for _, want := range []string{
		"Gateway gateway/fleet (Traefik on the hub): http://127.0.0.1:16446\n",
		"Load balancers: us 10.99.0.1, eu 10.99.0.2 (",
		"kubectl --kubeconfig /state/kubeconfigs/hub.kubeconfig -n demo patch rayservice berry --type merge -p '" + blueGreenPatch + "'\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q does not contain %q", out.String(), want)
		}
	}
}
