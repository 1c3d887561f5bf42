package raycluster

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/exclusivity"
	"github.com/rayfleet/rayfleet/spoke/metrics"
	"github.com/rayfleet/rayfleet/spoke/podsecurity"
)

// Environment variables KubeRay's operator reads; the spoke honours the same names so a
// KubeRay Deployment's env can be carried over unchanged.
const (
	envEnableGCSFTRedisCleanup = "ENABLE_GCS_FT_REDIS_CLEANUP"
	envEnableRandomPodDelete   = "ENABLE_RANDOM_POD_DELETE"
	envDefaultRequeueSeconds   = "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"
	// envDefaultRequeueSecondsShort is the name KubeRay's docs use; both are honoured, the
	// operator's own name first.
	envDefaultRequeueSecondsShort = "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS"
)

// defaultRequeueSeconds is KubeRay's periodic resync of a healthy RayCluster.
const defaultRequeueSeconds = 300

// defaultConcurrentReconciles replaces KubeRay's single worker, the reason it needs ~20 s per
// cluster when 200 arrive at once; reconciles of different clusters share nothing.
const defaultConcurrentReconciles = 16

// Options tune the RayCluster reconciler. Start from OptionsFromEnv.
type Options struct {
	// GCSFTRedisCleanup runs the Redis cleanup Job before a GCS FT cluster is deleted.
	GCSFTRedisCleanup bool
	// RandomPodDelete lets autoscaled groups scale down by deleting arbitrary workers.
	RandomPodDelete bool
	// ResyncPeriod is how often a settled cluster is reconciled again.
	ResyncPeriod time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles.
	MaxConcurrentReconciles int
	// Build holds what changes the objects built for a cluster.
	Build builder.Options
	// PodSecurity is the member's Pod Security level: no Pod of a hub-placed RayCluster that
	// violates it is created. Nil checks nothing.
	PodSecurity *podsecurity.Checker
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
	// Gate, when set, keeps the reconciler off every RayCluster while another controller
	// (KubeRay's operator, a second spoke) is active; nil reconciles unconditionally.
	Gate *exclusivity.Gate
	// Metrics receives the KubeRay metrics; nil means a set registered on MetricsRegisterer.
	Metrics *metrics.RayClusterMetrics
	// MetricsRegisterer is where a default metrics set is registered; nil means
	// controller-runtime's registry, served on --metrics-bind-address.
	MetricsRegisterer prometheus.Registerer
}

// OptionsFromEnv reads the KubeRay environment variables through getenv (os.Getenv in
// production, a map lookup in tests).
func OptionsFromEnv(getenv func(string) string) Options {
	if getenv == nil {
		getenv = os.Getenv
	}
	o := Options{
		GCSFTRedisCleanup:       !strings.EqualFold(getenv(envEnableGCSFTRedisCleanup), "false"),
		RandomPodDelete:         strings.EqualFold(getenv(envEnableRandomPodDelete), "true"),
		ResyncPeriod:            defaultRequeueSeconds * time.Second,
		MaxConcurrentReconciles: defaultConcurrentReconciles,
		Build:                   builder.OptionsFromEnv(getenv),
		PodSecurity:             podsecurity.Default(),
	}
	for _, name := range []string{envDefaultRequeueSeconds, envDefaultRequeueSecondsShort} {
		if s, err := strconv.Atoi(getenv(name)); err == nil && s > 0 {
			o.ResyncPeriod = time.Duration(s) * time.Second
			break
		}
	}
	return o
}
