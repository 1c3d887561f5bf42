package traffic

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// holds reports whether live has every field want sets, at want's value: its labels,
// annotations and everything outside metadata and status. Fields only live has (defaults, an
// allocated clusterIP, what another manager added) do not count, as they would not for a
// server-side apply; lists count whole, element by element.
func holds(live, want client.Object) bool {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false
	}
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return false
	}
	for _, k := range []string{"apiVersion", "kind", "status"} {
		delete(w, k)
	}
	if meta, ok := w["metadata"].(map[string]any); ok {
		w["metadata"] = map[string]any{"labels": meta["labels"], "annotations": meta["annotations"]}
	}
	return contains(l, w)
}

// holdsRoute is holds for the route, whose spec is the hub's alone: a field the hub no longer
// sets (a hostname dropped from the policy) must go, so live's spec may hold nothing more than
// want's either.
func holdsRoute(live, want *gwv1.HTTPRoute) bool {
	return holds(live, want) && holds(&gwv1.HTTPRoute{Spec: want.Spec}, &gwv1.HTTPRoute{Spec: live.Spec})
}

// contains reports whether have holds want: every key of a map, with a value holding want's;
// lists of the same length, element by element; anything else equal. A nil want is held by
// anything.
func contains(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}
