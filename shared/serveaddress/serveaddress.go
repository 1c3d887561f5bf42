// Package serveaddress says which serve addresses a member may report for the hub to route to:
// those its MemberCluster grants (spec.serveAddresses), never one of the traffic cluster itself.
// It is pure and imports only the fleet API, so the hub's traffic path and its membership
// status judge a grant the same way.
package serveaddress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// DefaultClusterDomain is the traffic cluster's DNS domain unless the hub is told otherwise.
const DefaultClusterDomain = "cluster.local"

// Cluster is what the hub knows of the traffic cluster's own addresses: no member may
// report one, granted or not, or a route would put the cluster's own endpoints (its API server,
// to begin with) behind the Gateway.
type Cluster struct {
	// Ranges are its Pod and Service CIDRs.
	Ranges []netip.Prefix
	// Domain is its cluster DNS domain; "" means DefaultClusterDomain.
	Domain string
}

// refusedSuffixes are the DNS names that resolve inside the traffic cluster: its Services
// (under "svc", which its resolvers complete with the cluster domain) and localhost.
func (tc Cluster) refusedSuffixes() []string {
	domain := strings.TrimSuffix(strings.ToLower(tc.Domain), ".")
	if domain == "" {
		domain = DefaultClusterDomain
	}
	return []string{domain, "svc", "localhost"}
}

// Policy is what one member may report as a serve address: inside the ranges its
// MemberCluster grants when it grants any, and never an address of the traffic cluster itself.
type Policy struct {
	// Bounded is whether the MemberCluster grants ranges; without, any address but the always
	// refused ones is taken, and the MemberCluster carries a Warning.
	Bounded bool
	// CIDRs are the IP ranges granted.
	CIDRs []netip.Prefix
	// Domains are the DNS names granted, each with every name under it.
	Domains []string
	// Cluster is the traffic cluster, whose own addresses are refused whatever is granted.
	Cluster Cluster
}

// PolicyOf reads a MemberCluster's grant. An entry that does not parse is an error
// naming it: the grant is then taken as granting nothing, so a typo never widens what a member
// may report.
func PolicyOf(grant *fleetv1alpha1.ServeAddressRanges, tc Cluster) (Policy, error) {
	p := Policy{Cluster: tc}
	if grant == nil {
		return p, nil
	}
	p.Bounded = true
	var errs []error
	for _, c := range grant.CIDRs {
		prefix, err := netip.ParsePrefix(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("serveAddresses.cidrs: %q is no CIDR", c))
			continue
		}
		p.CIDRs = append(p.CIDRs, prefix.Masked())
	}
	for _, d := range grant.Domains {
		name := strings.TrimSuffix(strings.ToLower(d), ".")
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			errs = append(errs, fmt.Errorf("serveAddresses.domains: %q is no DNS name", d))
			continue
		}
		p.Domains = append(p.Domains, name)
	}
	if len(errs) > 0 {
		return Policy{Bounded: true, Cluster: tc}, errors.Join(errs...)
	}
	return p, nil
}

// Check says why host (an IP or a DNS name, as ParseAddress returns it) may not be routed to;
// nil when it may.
func (p Policy) Check(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.checkIP(ip.Unmap())
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if !strings.Contains(name, ".") {
		// A single label is completed by the gateway's resolver with the traffic cluster's
		// search domains: a Service of the gateway's own namespace, say.
		return fmt.Errorf("%s is a single DNS label, which resolves inside the traffic cluster", host)
	}
	for _, s := range p.Cluster.refusedSuffixes() {
		if name == s || strings.HasSuffix(name, "."+s) {
			return fmt.Errorf("%s is under .%s, which resolves inside the traffic cluster", host, s)
		}
	}
	if !p.Bounded {
		return nil
	}
	for _, d := range p.Domains {
		if name == d || strings.HasSuffix(name, "."+d) {
			return nil
		}
	}
	return fmt.Errorf("%s is under none of the domains its MemberCluster grants (%s)", host, orNone(p.Domains))
}

// checkIP refuses the addresses that are never a member's serve address, then what the grant
// leaves out.
func (p Policy) checkIP(ip netip.Addr) error {
	switch {
	case ip.IsUnspecified(), ip.IsLoopback(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast():
		return fmt.Errorf("%s is unspecified, loopback, link-local or multicast", ip)
	}
	for _, r := range p.Cluster.Ranges {
		if r.Contains(ip) {
			return fmt.Errorf("%s is in %s, a range of the traffic cluster itself", ip, r)
		}
	}
	if !p.Bounded {
		return nil
	}
	for _, c := range p.CIDRs {
		if c.Contains(ip) {
			return nil
		}
	}
	cidrs := make([]string, len(p.CIDRs))
	for i, c := range p.CIDRs {
		cidrs[i] = c.String()
	}
	return fmt.Errorf("%s is in none of the CIDRs its MemberCluster grants (%s)", ip, orNone(cidrs))
}

// ParseCIDRs parses the traffic cluster's ranges as the hub's flag gives them.
func ParseCIDRs(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, c := range list {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("%q is no CIDR: %w", c, err)
		}
		out = append(out, prefix.Masked())
	}
	return out, nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
