package main

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/rayservice"
)

// dashboardTimeout bounds every call to a Ray dashboard or Serve proxy, KubeRay's 2 s: one
// unreachable head must not hold a reconcile worker for long.
const dashboardTimeout = 2 * time.Second

// gatewayGroupVersion is the Gateway API version the incremental upgrade writes.
const gatewayGroupVersion = "gateway.networking.k8s.io/v1"

// setDashboardAccess fills in how the RayService reconciler reaches Ray dashboards and Serve
// proxies: the address templates of the command line and an HTTP client factory whose metrics
// go to reg.
func setDashboardAccess(o *rayservice.Options, f flags, reg prometheus.Registerer) error {
	resolver, err := dashboard.NewTemplateResolver(f.dashboardTemplate, f.proxyTemplate, o.Build.ClusterDomain)
	if err != nil {
		return fmt.Errorf("invalid --dashboard-address-template or --serve-proxy-address-template: %w", err)
	}
	factory, err := dashboard.NewFactory(dashboard.FactoryOptions{Timeout: dashboardTimeout, Registerer: reg})
	if err != nil {
		return fmt.Errorf("creating the Ray dashboard client factory: %w", err)
	}
	o.Resolver = resolver
	o.Dashboards = factory
	return nil
}

// detectGatewayAPI asks the API server whether it serves Gateway API v1.
func detectGatewayAPI(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("creating a discovery client: %w", err)
	}
	return gatewayAPIServed(dc)
}

// gatewayAPIServed reports whether gateway.networking.k8s.io/v1 serves both Gateways and
// HTTPRoutes, the two kinds an incremental upgrade writes. Without them the RayService
// reconciler never touches Gateway API types (no informers, no writes), so a member without the
// CRDs works as long as no RayService asks for NewClusterWithIncrementalUpgrade. It is asked
// once at startup: CRDs installed later take effect when the spoke restarts.
func gatewayAPIServed(dc discovery.ServerResourcesInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(gatewayGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gatewayGroupVersion, err)
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		served[r.Name] = true
	}
	return served["gateways"] && served["httproutes"], nil
}
