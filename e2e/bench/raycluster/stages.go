package main

import (
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
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
// create→ready time can be split into the spoke's share and the control plane's; and when its
// head Pod was first seen Ready and its status first said HeadPodReady, the wait of whatever
// acts on the head (a RayService submitting its Serve config).
type podStages struct {
	mu   sync.Mutex
	seen map[string][numStages]bool
	last map[string][numStages]time.Time
	// headReady and headReported are by cluster.
	headReady, headReported map[string]time.Time
}

func newPodStages() *podStages {
	return &podStages{seen: map[string][numStages]bool{}, last: map[string][numStages]time.Time{},
		headReady: map[string]time.Time{}, headReported: map[string]time.Time{}}
}

// observeReported notes that cluster's status says HeadPodReady at time now (the first time counts).
func (p *podStages) observeReported(cluster string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.headReported[cluster]; !ok {
		p.headReported[cluster] = now
	}
}

// headLags returns, sorted, how long after its head Pod was seen Ready each cluster's status
// said HeadPodReady; zero when the two watches delivered them the other way round.
func (p *podStages) headLags() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for cluster, ready := range p.headReady {
		if reported, ok := p.headReported[cluster]; ok {
			out = append(out, max(reported.Sub(ready), 0))
		}
	}
	benchutil.SortDurations(out)
	return out
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
	if _, ok := p.headReady[cluster]; !ok && reached[podReady] && pod.Labels[labels.NodeType] == string(rayv1.HeadNode) {
		p.headReady[cluster] = now
	}
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
