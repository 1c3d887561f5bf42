package rayservice

import (
	"strings"
	"testing"
)

func TestOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		zeroDowntime bool
		domain       string
	}{
		{"defaults", nil, true, "cluster.local"},
		{"zero downtime off, any case", map[string]string{envEnableZeroDowntime: "FALSE"}, false, "cluster.local"},
		{"anything else keeps it on", map[string]string{envEnableZeroDowntime: "no"}, true, "cluster.local"},
		{"cluster domain", map[string]string{"CLUSTER_DOMAIN": "corp.example"}, true, "corp.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := OptionsFromEnv(func(k string) string { return tt.env[k] })
			if o.ZeroDowntime != tt.zeroDowntime || o.Build.ClusterDomain != tt.domain ||
				o.MaxConcurrentReconciles != defaultConcurrentReconciles || o.GatewayAPI {
				t.Fatalf("got %+v", o)
			}
		})
	}
}

func TestCryptoRandString(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := cryptoRandString(5)
		if len(s) != 5 || strings.Trim(s, nameAlphabet) != "" {
			t.Fatalf("bad suffix %q", s)
		}
		seen[s] = true
	}
	if len(seen) < 95 {
		t.Fatalf("only %d distinct suffixes in 100", len(seen))
	}
}
