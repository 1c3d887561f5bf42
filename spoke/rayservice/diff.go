package rayservice

import (
	"encoding/json"
	"reflect"
)

// covers reports whether have (an object's spec as the API server holds it) already says
// everything want (the spec built for it) says: every field want sets is in have with the same
// value, lists element by element and of the same length. Fields only have sets are ignored:
// the API server's defaults (a Gateway listener's allowedRoutes, a backend's weight) must not
// make an unchanged object look changed, or every reconcile would write it again.
func covers(have, want any) bool {
	h, err := toJSONValue(have)
	if err != nil {
		return false
	}
	w, err := toJSONValue(want)
	if err != nil {
		return false
	}
	return coversValue(h, w)
}

func toJSONValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func coversValue(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if isEmptyJSON(wv) {
					continue
				}
				return false
			}
			if !coversValue(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !coversValue(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}

// isEmptyJSON reports whether v is a JSON value that says nothing: null, {} or [].
func isEmptyJSON(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	default:
		return false
	}
}
