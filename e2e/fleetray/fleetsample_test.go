//go:build e2e

package fleetray

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
)

// fleetSample is what a RayService held across the fleet at one moment.
type fleetSample struct {
	at time.Time
	// gpus are the GPUs requested by its worker Pods on both members that are neither
	// Succeeded nor Failed: a Pod being deleted holds its GPU until it is gone.
	gpus int64
	// serve are the RUNNING Serve replicas its copies report (running-replicas).
	serve int64
	// greenPercent is the binding's green share, -1 outside a blue/green; capacity whether
	// the blue/green shows capacity targets.
	greenPercent int32
	capacity     bool
}

// fleetSampler samples a RayService every gpuSamplePeriod until stopped.
type fleetSampler struct {
	mu      sync.Mutex
	samples []fleetSample
	cancel  context.CancelFunc
	done    chan struct{}
}

// sampleFleet starts sampling the RayService capacityName in ns; a sample whose reads fail is
// left out.
func sampleFleet(t *testing.T, f *localfleet.Fleet, ns string) *fleetSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &fleetSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(gpuSamplePeriod)
		defer tick.Stop()
		for {
			if sample, err := sampleOnce(ctx, f, ns); err == nil {
				s.mu.Lock()
				s.samples = append(s.samples, sample)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// stop stops sampling and returns the samples.
func (s *fleetSampler) stop() []fleetSample {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fleetSample(nil), s.samples...)
}

// sampleOnce reads one sample of capacityName in ns.
func sampleOnce(ctx context.Context, f *localfleet.Fleet, ns string) (fleetSample, error) {
	out := fleetSample{at: time.Now(), greenPercent: -1}
	for _, c := range memberClusters(f) {
		var pods corev1.PodList
		if err := c.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{labels.NodeType: string(rayv1.WorkerNode)}); err != nil {
			return out, fmt.Errorf("list worker Pods on %s: %w", c.Name, err)
		}
		for i := range pods.Items {
			out.gpus += podGPUs(&pods.Items[i])
		}
		var rs rayv1.RayService
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: capacityName}, &rs)
		if client.IgnoreNotFound(err) != nil {
			return out, fmt.Errorf("get RayService on %s: %w", c.Name, err)
		}
		if r, err := runningreplicas.Parse(rs.Annotations[labels.RunningReplicas]); err == nil {
			for _, n := range r.Serve {
				out.serve += int64(n)
			}
		}
	}
	var b fleetv1alpha1.RayServiceBinding
	if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: capacityName}, &b); err != nil {
		return out, fmt.Errorf("get the binding: %w", err)
	}
	if ro := b.Status.Rollout; ro != nil && ro.BlueGreen != nil {
		out.greenPercent, out.capacity = ro.BlueGreen.GreenPercent, ro.BlueGreen.Capacity != nil
	}
	return out, nil
}

// podGPUs are the GPUs p's containers request while it holds them.
func podGPUs(p *corev1.Pod) int64 {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return 0
	}
	var n int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[localcluster.GPUResource]; ok {
			n += q.Value()
		}
	}
	return n
}

// summarize fills in the figures from the samples, between the change and blue's retirement:
// the peaks, the GPU-seconds (each sample's GPUs held until the next sample), and when green
// was first seen at 100%.
func (fig *capacityFigures) summarize(changed, retired time.Time) {
	for i, s := range fig.samples {
		fig.peakGPUs, fig.peakServe = max(fig.peakGPUs, s.gpus), max(fig.peakServe, s.serve)
		fig.sawCapacity = fig.sawCapacity || s.capacity
		if s.greenPercent == 100 && fig.toGreenFull == 0 {
			fig.toGreenFull = s.at.Sub(changed)
		}
		from, until := s.at, retired
		if from.Before(changed) {
			from = changed
		}
		if i+1 < len(fig.samples) && fig.samples[i+1].at.Before(until) {
			until = fig.samples[i+1].at
		}
		if until.After(from) {
			fig.gpuSeconds += float64(s.gpus) * until.Sub(from).Seconds()
		}
	}
}

// row is the figures as a row of RESULTS.md's table.
func (fig *capacityFigures) row() string {
	full := "never"
	if fig.toGreenFull > 0 {
		full = fig.toGreenFull.Round(time.Second).String()
	}
	return fmt.Sprintf("| %s | %d | %.0f | %s | %s | %d | %d, %d |", fig.mode.label, fig.peakGPUs, fig.gpuSeconds,
		full, fig.toRetire.Round(time.Second), fig.peakServe, fig.sent, fig.failed)
}
