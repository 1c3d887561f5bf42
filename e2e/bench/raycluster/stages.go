package main

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// stage is a point in a Pod's life the benchmark times.
type stage int

const (
	podCreated   stage = iota // first seen by the watch
	podScheduled              // spec.nodeName set (the scheduler's binding)
	podReady                  // Ready=True (kwok's pod-ready stage)
	numStages
)

var stageNames = [numStages]string{"last Pod created", "last Pod scheduled", "last Pod ready"}

// podStages records, per RayCluster, when the last of its Pods reached each stage, so the
// create→ready time can be split into the spoke's share and the control plane's.
type podStages struct {
	mu   sync.Mutex
	seen map[string][numStages]bool
	last map[string][numStages]time.Time
}

func newPodStages() *podStages {
	return &podStages{seen: map[string][numStages]bool{}, last: map[string][numStages]time.Time{}}
}

// observe notes the stages pod has reached at time now (each Pod counted once per stage).
func (p *podStages) observe(pod *corev1.Pod, now time.Time) {
	cluster := pod.Labels[labels.Cluster]
	if cluster == "" {
		return
	}
	reached := [numStages]bool{podCreated: true, podScheduled: pod.Spec.NodeName != ""}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			reached[podReady] = true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := string(pod.UID)
	seen := p.seen[key]
	last := p.last[cluster]
	for s := range numStages {
		if reached[s] && !seen[s] {
			seen[s] = true
			if now.After(last[s]) {
				last[s] = now
			}
		}
	}
	p.seen[key] = seen
	p.last[cluster] = last
}

// sinceCreation returns, per stage, the sorted durations from each cluster's creation to the
// moment its last Pod reached the stage.
func (p *podStages) sinceCreation(created map[string]time.Time) [numStages][]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [numStages][]time.Duration
	for cluster, last := range p.last {
		c, ok := created[cluster]
		if !ok {
			continue
		}
		for s := range numStages {
			if !last[s].IsZero() {
				out[s] = append(out[s], last[s].Sub(c))
			}
		}
	}
	for s := range numStages {
		benchutil.SortDurations(out[s])
	}
	return out
}
