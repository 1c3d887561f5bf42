package serveaddress

import (
	"net/netip"
	"strings"
	"testing"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestPolicy(t *testing.T) {
	tc := Cluster{Ranges: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("10.96.0.0/12")}}
	granted := &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"203.0.113.0/24", "2001:db8::/32"}, Domains: []string{"us.example.com."}}
	tests := []struct {
		name  string
		grant *fleetv1alpha1.ServeAddressRanges
		host  string
		// want is "" for allowed, else a substring of the refusal.
		want string
	}{
		{name: "ungranted: a public IP is routed to", host: "198.51.100.7"},
		{name: "ungranted: a DNS name is routed to", host: "lb.us.example.com"},
		{name: "loopback", host: "127.0.0.1", want: "loopback"},
		{name: "IPv6 loopback", host: "::1", want: "loopback"},
		{name: "IPv4 loopback mapped into IPv6", host: "::ffff:127.0.0.1", want: "loopback"},
		{name: "unspecified", host: "0.0.0.0", want: "unspecified"},
		{name: "link-local (cloud metadata)", host: "169.254.169.254", want: "link-local"},
		{name: "IPv6 link-local", host: "fe80::1", want: "link-local"},
		{name: "multicast", host: "224.0.0.1", want: "multicast"},
		{name: "the traffic cluster's Service range", host: "10.96.0.1", want: "a range of the traffic cluster itself"},
		{name: "the traffic cluster's Pod range", host: "10.244.3.9", want: "a range of the traffic cluster itself"},
		{name: "the API server by its cluster name", host: "kubernetes.default.svc.cluster.local", want: "under .cluster.local"},
		{name: "a Service under svc", host: "kubernetes.default.svc", want: "under .svc"},
		{name: "absolute names count the same", host: "kubernetes.default.svc.cluster.local.", want: "under .cluster.local"},
		{name: "case does not matter", host: "Kubernetes.Default.SVC", want: "under .svc"},
		{name: "a single label", host: "kubernetes", want: "single DNS label"},
		{name: "localhost", host: "localhost", want: "single DNS label"},
		{name: "under localhost", host: "a.localhost", want: "under .localhost"},
		{name: "granted: an IP in a CIDR", grant: granted, host: "203.0.113.9"},
		{name: "granted: an IPv6 address in a CIDR", grant: granted, host: "2001:db8::5"},
		{name: "granted: a private address outside the CIDRs", grant: granted, host: "10.0.0.5", want: "in none of the CIDRs its MemberCluster grants (203.0.113.0/24, 2001:db8::/32)"},
		{name: "granted: the domain itself", grant: granted, host: "us.example.com"},
		{name: "granted: a name under the domain", grant: granted, host: "lb.us.example.com"},
		{name: "granted: a name that only ends like the domain", grant: granted, host: "evilus.example.com", want: "under none of the domains"},
		{name: "granted: another domain", grant: granted, host: "lb.eu.example.com", want: "under none of the domains"},
		{name: "granted does not lift the always refused", grant: &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"0.0.0.0/0"}, Domains: []string{"cluster.local"}},
			host: "10.96.0.1", want: "a range of the traffic cluster itself"},
		{name: "granted does not lift the cluster domain", grant: &fleetv1alpha1.ServeAddressRanges{Domains: []string{"cluster.local"}},
			host: "kubernetes.default.svc.cluster.local", want: "under .cluster.local"},
		{name: "an empty grant grants nothing", grant: &fleetv1alpha1.ServeAddressRanges{}, host: "198.51.100.7", want: "in none of the CIDRs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PolicyOf(tt.grant, tc)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Check(tt.host)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("Check(%s) = %v, want allowed", tt.host, got)
			case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
				t.Errorf("Check(%s) = %v, want %q", tt.host, got, tt.want)
			}
		})
	}
}

func TestPolicyOfRefusesWhatDoesNotParse(t *testing.T) {
	p, err := PolicyOf(&fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"203.0.113.0/24", "10.0.0.0/33"}, Domains: []string{"-bad-"}}, Cluster{})
	if err == nil || !strings.Contains(err.Error(), `"10.0.0.0/33" is no CIDR`) || !strings.Contains(err.Error(), `"-bad-" is no DNS name`) {
		t.Fatalf("error %v, want both entries named", err)
	}
	// A typo never widens the grant: the policy grants nothing, not even the valid entry.
	if p.Check("203.0.113.9") == nil {
		t.Error("a grant that does not parse routed to an address")
	}
}

func TestClusterDomain(t *testing.T) {
	p, err := PolicyOf(nil, Cluster{Domain: "corp.internal"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check("api.default.svc.corp.internal"); err == nil || !strings.Contains(err.Error(), "under .corp.internal") {
		t.Errorf("a name under the cluster domain: %v", err)
	}
	if err := p.Check("lb.example.cluster.local"); err != nil {
		t.Errorf("cluster.local is not this cluster's domain: %v", err)
	}
}
