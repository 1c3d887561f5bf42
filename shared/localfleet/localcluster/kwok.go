package localcluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kwok's selector: only Nodes carrying this annotation are played by kwok.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
)

// GPUResource is the extended resource name fake GPU Nodes advertise.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// NodeSpec describes one fake Node.
type NodeSpec struct {
	// Name is the Node's name; FakeNodes fills it in.
	Name string
	// CPU and Memory are the allocatable quantities; default "64" and "256Gi".
	CPU, Memory string
	// Pods is the allocatable Pod count; default 250.
	Pods int
	// GPUs adds nvidia.com/gpu to the allocatable resources.
	GPUs int
	// Labels are added to the standard ones (hostname, os, arch, type=kwok).
	Labels map[string]string
	// Taints are set on the Node; none by default, so any Pod fits.
	Taints []corev1.Taint
}

// FakeNodes returns n copies of tmpl named kwok-node-0 … kwok-node-<n-1>.
func FakeNodes(n int, tmpl NodeSpec) []NodeSpec {
	nodes := make([]NodeSpec, n)
	for i := range nodes {
		nodes[i] = tmpl
		nodes[i].Name = fmt.Sprintf("kwok-node-%d", i)
		nodes[i].Labels = maps.Clone(tmpl.Labels)
	}
	return nodes
}

// kwokParallelism replaces kwok's default of 4 Pods played at a time: with API calls of ~100 ms
// under load, 4 would take 20 s to make 800 Pods Ready and the benchmark would time kwok, not
// the controller under test. A kubelet per Node works in parallel too.
const kwokParallelism = 64

// kwokConfig sets kwok's own options; it goes next to the stage definitions. A config file
// is not defaulted field by field, so every parallelism is spelled out (kwok's defaults: 4, 4,
// 4 and 1).
const kwokConfig = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %[1]d
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
`

func (c *Cluster) startKwok() (*Process, error) {
	cfg := filepath.Join(c.Dir, "kwok-config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, kwokConfig, kwokParallelism), 0o600); err != nil {
		return nil, fmt.Errorf("writing kwok config: %w", err)
	}
	return c.start("kwok", c.bin("kwok"), []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--config=" + cfg,
		// The standalone binary does nothing without Stage definitions; build.sh renders
		// kwok's "fast" stages (Pods Ready at once, Job Pods Succeeded, deletions immediate).
		"--config=" + c.bin("kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=" + kwokNodeValue,
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16", "--node-ip=10.0.0.1",
	}, nil)
}

// createNodes creates the fake Nodes and waits until kwok reports every one Ready.
func (c *Cluster) createNodes(ctx context.Context) error {
	for _, spec := range c.opts.Nodes {
		node := spec.node()
		want := node.Status
		if err := c.Client.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Node %s: %w", spec.Name, err)
		}
		// Status sent with a create is not guaranteed to survive; make sure kwok sees capacity.
		if len(node.Status.Allocatable) == 0 {
			node.Status = want
			if err := c.Client.Status().Update(ctx, node); err != nil {
				return fmt.Errorf("setting capacity of Node %s: %w", spec.Name, err)
			}
		}
	}
	for _, spec := range c.opts.Nodes {
		err := wait.PollUntilContextTimeout(ctx, pollInterval, startTimeout, true, func(ctx context.Context) (bool, error) {
			node := &corev1.Node{}
			if err := c.Client.Get(ctx, client.ObjectKey{Name: spec.Name}, node); err != nil {
				return false, fmt.Errorf("reading Node %s: %w", spec.Name, err)
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for kwok to make Node %s Ready: %w", spec.Name, err)
		}
		if err := c.untaintNotReady(ctx, spec.Name); err != nil {
			return err
		}
	}
	return nil
}

// untaintNotReady removes the node.kubernetes.io/not-ready taint that the TaintNodesByCondition
// admission plugin puts on every new Node. The KCM's node lifecycle controller removes it once
// the Node is Ready; without a KCM nobody would, and the scheduler would bind nothing.
func (c *Cluster) untaintNotReady(ctx context.Context, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady
		})
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		return c.Client.Update(ctx, node)
	})
	if err != nil {
		return fmt.Errorf("removing the not-ready taint of Node %s: %w", name, err)
	}
	return nil
}

func (s NodeSpec) node() *corev1.Node {
	cpu, mem, pods := s.CPU, s.Memory, s.Pods
	if cpu == "" {
		cpu = "64"
	}
	if mem == "" {
		mem = "256Gi"
	}
	if pods == 0 {
		pods = 250
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	if s.GPUs > 0 {
		res[GPUResource] = *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI)
	}
	labels := map[string]string{
		corev1.LabelHostname: s.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", "type": "kwok",
	}
	maps.Copy(labels, s.Labels)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.Name,
			Labels: labels,
			// ttl 0 stops the KCM's TTL controller from annotating the Node behind kwok's back.
			Annotations: map[string]string{kwokNodeAnnotation: kwokNodeValue, "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec:   corev1.NodeSpec{Taints: s.Taints},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res.DeepCopy()},
	}
}

// CreateNamespace creates a namespace and its "default" ServiceAccount: the ServiceAccount
// admission plugin rejects Pods until that exists, and without a KCM nobody else creates it.
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
	if err := c.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/default: %w", name, err)
	}
	return nil
}
