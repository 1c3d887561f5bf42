package benchutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// Percentile returns the q-th quantile (0..1) of sorted durations by nearest rank.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// SortDurations sorts d in place, shortest first.
func SortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// Round rounds d to the millisecond, the precision the reports print.
func Round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// FormatTotals prints totals by key, in key order, with their share per object, e.g.
// "success=200 (1.00/cluster)".
func FormatTotals(m map[string]float64, n float64, unit string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f (%.2f/%s)", k, m[k], m[k]/n, unit))
	}
	return strings.Join(parts, ", ")
}

// DefaultSpokeBinary is $RAYFLEET_BIN/spoke, default bin/spoke in the repository.
func DefaultSpokeBinary() string {
	dir := os.Getenv("RAYFLEET_BIN")
	if dir == "" {
		root, err := localcluster.RepoRoot()
		if err != nil {
			return filepath.Join("bin", "spoke")
		}
		dir = filepath.Join(root, "bin")
	}
	return filepath.Join(dir, "spoke")
}
