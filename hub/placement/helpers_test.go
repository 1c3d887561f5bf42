package placement

import (
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rl parses a resource list from name/quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// memberWrapper builds a Member: ready, with the given free capacity.
type memberWrapper struct{ Member }

func member(name string, free ...string) *memberWrapper {
	return &memberWrapper{Member{Name: name, Ready: true, Free: rl(free...)}}
}

func (w *memberWrapper) label(key, value string) *memberWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

func (w *memberWrapper) region(r string) *memberWrapper { return w.label("region", r) }

func (w *memberWrapper) notReady(reason string) *memberWrapper {
	w.Ready, w.NotReadyReason = false, reason
	return w
}

func (w *memberWrapper) taint(key, value string, effect corev1.TaintEffect) *memberWrapper {
	w.Taints = append(w.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

func (w *memberWrapper) obj() Member { return w.Member }

func members(ws ...*memberWrapper) []Member {
	out := make([]Member, len(ws))
	for i, w := range ws {
		out[i] = w.obj()
	}
	return out
}

// diffDecision compares decisions, an empty Rejected map equal to a nil one.
func diffDecision(want, got Decision) string {
	return cmp.Diff(want, got, cmpopts.EquateEmpty())
}
