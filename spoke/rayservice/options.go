package rayservice

import (
	"crypto/rand"
	"math/big"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
	"github.com/rayfleet/rayfleet/spoke/metrics"
)

// envEnableZeroDowntime is KubeRay's switch for upgrades through a new cluster when a
// RayService names no upgrade strategy; only "false" (any case) turns it off.
const envEnableZeroDowntime = "ENABLE_ZERO_DOWNTIME"

// defaultConcurrentReconciles replaces KubeRay's single worker: reconciles of different
// RayServices share nothing, and each may wait up to two seconds on a dashboard.
const defaultConcurrentReconciles = 16

// Options tune the RayService reconciler. Start from OptionsFromEnv.
type Options struct {
	// MaxConcurrentReconciles bounds parallel reconciles; 0 means the default, 16.
	MaxConcurrentReconciles int
	// ServePolls are the intervals at which Serve applications are read; zero fields mean the
	// defaults (2 s while a RayService changes, 10 s once settled).
	ServePolls ServePolls
	// ZeroDowntime upgrades through a new cluster when a RayService names no upgrade strategy
	// (ENABLE_ZERO_DOWNTIME, true unless "false").
	ZeroDowntime bool
	// GatewayAPI says the member serves gateway.networking.k8s.io/v1 Gateways and HTTPRoutes;
	// without it a RayService asking for NewClusterWithIncrementalUpgrade fails validation.
	GatewayAPI bool
	// Build holds what changes the RayClusters and Services built (cluster domain, KubeRay version).
	Build builder.Options
	// Resolver turns head Services and head Pods into dashboard and proxy URLs; nil means the
	// in-cluster addresses (dashboard.DefaultDashboardTemplate, DefaultProxyTemplate).
	Resolver dashboard.Resolver
	// Dashboards makes dashboard clients; nil means dashboard.NewFactory with its metrics on
	// MetricsRegisterer.
	Dashboards dashboard.Factory
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
	// Gate, when set, keeps the reconciler off every RayService while another controller
	// (KubeRay's operator, a second spoke) is active; nil reconciles unconditionally.
	Gate *exclusivity.Gate
	// Rand returns n random lower-case alphanumerics for new cluster names; nil means
	// crypto/rand.
	Rand func(n int) string
	// Metrics receives the RayService metrics; nil means a set registered on MetricsRegisterer.
	Metrics *metrics.RayServiceMetrics
	// MetricsRegisterer is where default metrics are registered; nil means controller-runtime's
	// registry, served on --metrics-bind-address.
	MetricsRegisterer prometheus.Registerer
}

// OptionsFromEnv reads KubeRay's environment variables through getenv (os.Getenv when nil).
// GatewayAPI is left false: whether the member serves Gateway API is discovered, not configured.
func OptionsFromEnv(getenv func(string) string) Options {
	if getenv == nil {
		getenv = os.Getenv
	}
	return Options{
		MaxConcurrentReconciles: defaultConcurrentReconciles,
		ZeroDowntime:            !strings.EqualFold(getenv(envEnableZeroDowntime), "false"),
		Build:                   builder.OptionsFromEnv(getenv),
	}
}

// nameAlphabet is the alphabet of apimachinery's rand.String, KubeRay's source of cluster
// name suffixes: lower-case alphanumerics without vowels, so no word is ever spelt.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// cryptoRandString returns n characters of nameAlphabet from crypto/rand.
func cryptoRandString(n int) string {
	var b strings.Builder
	limit := big.NewInt(int64(len(nameAlphabet)))
	for range n {
		i, err := rand.Int(rand.Reader, limit)
		if err != nil {
			// crypto/rand does not fail on the platforms Go supports; a fixed character
			// keeps the name valid should it ever.
			b.WriteByte(nameAlphabet[0])
			continue
		}
		b.WriteByte(nameAlphabet[i.Int64()])
	}
	return b.String()
}
