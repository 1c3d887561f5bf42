package raycluster

import (
	"testing"
	"time"
)

func TestOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantFT     bool
		wantRandom bool
		wantResync time.Duration
	}{
		{"defaults", nil, true, false, 300 * time.Second},
		{"KubeRay's switches, any case", map[string]string{
			envEnableGCSFTRedisCleanup: "FALSE", envEnableRandomPodDelete: "True", envDefaultRequeueSeconds: "60",
		}, false, true, time.Minute},
		{"the documented name works too", map[string]string{envDefaultRequeueSecondsShort: "30"}, true, false, 30 * time.Second},
		{"bad requeue keeps the default", map[string]string{envDefaultRequeueSeconds: "soon"}, true, false, 300 * time.Second},
		{"non-positive requeue keeps the default", map[string]string{envDefaultRequeueSeconds: "0"}, true, false, 300 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := OptionsFromEnv(func(k string) string { return tt.env[k] })
			if o.GCSFTRedisCleanup != tt.wantFT || o.RandomPodDelete != tt.wantRandom || o.ResyncPeriod != tt.wantResync {
				t.Fatalf("got cleanup=%v random=%v resync=%v", o.GCSFTRedisCleanup, o.RandomPodDelete, o.ResyncPeriod)
			}
			if o.MaxConcurrentReconciles != defaultConcurrentReconciles {
				t.Fatalf("MaxConcurrentReconciles = %d", o.MaxConcurrentReconciles)
			}
		})
	}
}
