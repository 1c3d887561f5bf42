//go:build e2e

package bluegreen

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
)

// appliedMargin is how long after the recorder first read a configuration in Traefik's API a
// request may still have been routed by the one before: a read interval, and a request sent
// just before the switch.
const appliedMargin = routePoll + 200*time.Millisecond

// traefikService is the part of a service in Traefik's API the recorder reads.
type traefikService struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Weighted *struct {
		Services []struct {
			Name   string `json:"name"`
			Weight *int32 `json:"weight"`
			Status *int   `json:"status"`
		} `json:"services"`
	} `json:"weighted"`
}

// readApplied reads the weights Traefik routes the HTTPRoute ns/route by, per member, from its
// API: the weighted service its Gateway API provider made for the route, whose children are the
// route's backends (members by backend name). A backend Traefik answers 500 for (unresolved) is
// left out; nil when Traefik has no service for the route.
func readApplied(ctx context.Context, ns, route string, byBackend map[string]string) (map[string]int32, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fleet.GatewayAdminURL+"/api/http/services?per_page=1000", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading traefik's services: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading traefik's services: %s", resp.Status)
	}
	var services []traefikService
	if err := json.NewDecoder(resp.Body).Decode(&services); err != nil {
		return nil, fmt.Errorf("decoding traefik's services: %w", err)
	}
	// The provider names a route's weighted service "httproute-<ns>-<name>-gw-..." and a
	// backend "<ns>-<service>-http-<port>", each with its characters other than letters and
	// digits turned into dashes.
	prefix := traefikName("httproute-"+ns+"-"+route) + "-gw-"
	child := map[string]string{}
	for backend, member := range byBackend {
		child[traefikName(ns+"-"+backend+"-http")] = member
	}
	var out map[string]int32
	for _, s := range services {
		if s.Provider != "kubernetesgateway" || s.Weighted == nil || !strings.HasPrefix(s.Name, prefix) {
			continue
		}
		w := map[string]int32{}
		for _, c := range s.Weighted.Services {
			name, _, _ := strings.Cut(c.Name, "@")
			if i := strings.LastIndexByte(name, '-'); i >= 0 && strings.Trim(name[i+1:], "0123456789") == "" {
				name = name[:i]
			}
			m, ok := child[name]
			if !ok {
				return nil, fmt.Errorf("traefik's service %s: backend %s stands for no member", s.Name, c.Name)
			}
			if c.Status != nil {
				continue
			}
			weight := int32(1)
			if c.Weight != nil {
				weight = *c.Weight
			}
			w[m] += weight
		}
		if out != nil && !maps.Equal(out, w) {
			return nil, fmt.Errorf("traefik routes %s/%s by two weightings: %s and %s", ns, route, weightsText(out), weightsText(w))
		}
		out = w
	}
	return out, nil
}

// traefikName is name as Traefik's providers normalise it.
func traefikName(name string) string {
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}), "-")
}
