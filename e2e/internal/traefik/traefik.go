// Package traefik reads what Traefik, the local fleet's Gateway, actually routes by, from its
// API (localfleet's Fleet.GatewayAdminURL): a route's status says the gateway accepted new
// weights a moment before Traefik applies them, and the tests that judge who answered during a
// step count from when it applied them.
package traefik

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
)

// service is the part of a service in Traefik's API that Applied reads.
type service struct {
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

// Applied reads, from the Traefik API at adminURL, the weights Traefik routes the HTTPRoute
// ns/route by, per member: the weighted service its Gateway API provider made for the route,
// whose children are the route's backends (members by backend Service name). A backend Traefik
// answers 500 for (unresolved) is left out; nil when Traefik has no service for the route.
func Applied(ctx context.Context, adminURL, ns, route string, byBackend map[string]string) (map[string]int32, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/api/http/services?per_page=1000", nil)
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
	var services []service
	if err := json.NewDecoder(resp.Body).Decode(&services); err != nil {
		return nil, fmt.Errorf("decoding traefik's services: %w", err)
	}
	// The provider names a route's weighted service "httproute-<ns>-<name>-gw-..." and a
	// backend "<ns>-<service>-http-<port>", each with its characters other than letters and
	// digits turned into dashes.
	prefix := Name("httproute-"+ns+"-"+route) + "-gw-"
	child := map[string]string{}
	for backend, member := range byBackend {
		child[Name(ns+"-"+backend+"-http")] = member
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
			return nil, fmt.Errorf("traefik routes %s/%s by two weightings: %v and %v", ns, route, out, w)
		}
		out = w
	}
	return out, nil
}

// Name is name as Traefik's providers normalise it.
func Name(name string) string {
	return strings.Join(strings.FieldsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}), "-")
}
