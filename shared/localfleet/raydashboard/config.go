package raydashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// defaultAppName is the name Ray gives an application whose config has none.
const defaultAppName = "default"

// defaultRoutePrefix is the route Ray gives an application whose config has none.
const defaultRoutePrefix = "/"

// serveConfig is a declarative multi-application config (Ray's ServeDeploySchema) as the
// stand-in keeps it: the document itself, plus what the status computation needs.
type serveConfig struct {
	// raw is the accepted document, re-encoded; Config decodes it afresh for every caller.
	raw []byte
	// targetCapacity is the top-level target_capacity, nil when absent or null.
	targetCapacity *float64
	// proxyLocation and httpOptions are echoed in the Serve details when set; never modified.
	proxyLocation, httpOptions any
	apps                       []appConfig
}

// appConfig is one entry of the config's applications list.
type appConfig struct {
	name        string
	routePrefix *string // nil: the application has no HTTP route (route_prefix: null)
	deployments []string
	// replicas is each deployment's number of replicas once deployed, by name.
	replicas map[string]int
	// spec is the application's entry, kept for deployed_app_config.
	spec map[string]any
	// fingerprint identifies the entry's content; an application is redeployed when it changes.
	fingerprint string
}

// document decodes a fresh copy of the config; nil for a nil config.
func (cfg *serveConfig) document() map[string]any {
	if cfg == nil {
		return nil
	}
	var doc map[string]any
	_ = json.Unmarshal(cfg.raw, &doc) // raw was encoded from a decoded document
	return doc
}

// parseServeConfig validates a PUT body the way Ray's schema does for the fields the stand-in
// gives meaning to, and ignores the others. Ray answers an invalid config with HTTP 400 and a
// description of the problem; the returned error is that description.
func parseServeConfig(body []byte) (*serveConfig, error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	if doc == nil {
		return nil, errors.New("the body is not a JSON object: null")
	}
	cfg := &serveConfig{proxyLocation: doc["proxy_location"], httpOptions: doc["http_options"]}
	var err error
	if cfg.targetCapacity, err = parseTargetCapacity(doc["target_capacity"]); err != nil {
		return nil, err
	}
	rawApps, ok := doc["applications"]
	if !ok {
		return nil, errors.New("applications: field required")
	}
	list, ok := rawApps.([]any)
	if !ok {
		return nil, fmt.Errorf("applications: must be a list, got %s", jsonType(rawApps))
	}
	names := map[string]bool{}
	routes := map[string]string{}
	for i, item := range list {
		app, appErr := parseApp(item)
		if appErr != nil {
			return nil, fmt.Errorf("applications[%d]: %w", i, appErr)
		}
		if names[app.name] {
			return nil, fmt.Errorf("applications: found multiple applications named %q; names must be unique", app.name)
		}
		names[app.name] = true
		if app.routePrefix != nil {
			if other, dup := routes[*app.routePrefix]; dup {
				return nil, fmt.Errorf("applications: %q and %q both have route_prefix %q; route prefixes must be unique",
					other, app.name, *app.routePrefix)
			}
			routes[*app.routePrefix] = app.name
		}
		cfg.apps = append(cfg.apps, app)
	}
	if cfg.raw, err = json.Marshal(doc); err != nil {
		return nil, fmt.Errorf("re-encode the config: %w", err)
	}
	return cfg, nil
}

// parseTargetCapacity reads target_capacity: absent or null, or a number from 0 to 100.
func parseTargetCapacity(v any) (*float64, error) {
	if v == nil {
		return nil, nil
	}
	f, ok := v.(float64)
	if !ok {
		return nil, fmt.Errorf("target_capacity: must be a number, got %s", jsonType(v))
	}
	if f < 0 || f > 100 {
		return nil, fmt.Errorf("target_capacity: must be between 0 and 100, got %v", f)
	}
	return &f, nil
}

// parseApp reads one application entry. import_path is required as Ray requires it; a missing
// name is Ray's default application name.
func parseApp(item any) (appConfig, error) {
	spec, ok := item.(map[string]any)
	if !ok {
		return appConfig{}, fmt.Errorf("must be an object, got %s", jsonType(item))
	}
	name, err := optionalString(spec, "name", defaultAppName)
	if err != nil {
		return appConfig{}, err
	}
	if name == "" {
		name = defaultAppName
	}
	importPath, err := optionalString(spec, "import_path", "")
	if err != nil {
		return appConfig{}, err
	}
	if importPath == "" {
		return appConfig{}, errors.New("import_path: field required")
	}
	app := appConfig{name: name, spec: spec}
	if app.routePrefix, err = parseRoutePrefix(spec); err != nil {
		return appConfig{}, err
	}
	if app.deployments, err = deploymentNames(spec, importPath); err != nil {
		return appConfig{}, err
	}
	if app.replicas, err = deploymentReplicas(spec, app.deployments); err != nil {
		return appConfig{}, err
	}
	fingerprint, err := json.Marshal(spec) // map keys are sorted, so equal content, equal bytes
	if err != nil {
		return appConfig{}, fmt.Errorf("encode: %w", err)
	}
	app.fingerprint = string(fingerprint)
	return app, nil
}

// parseRoutePrefix reads route_prefix: absent means "/", null means no route, a string must
// start with "/".
func parseRoutePrefix(spec map[string]any) (*string, error) {
	v, present := spec["route_prefix"]
	if !present {
		route := defaultRoutePrefix
		return &route, nil
	}
	if v == nil {
		return nil, nil
	}
	route, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("route_prefix: must be a string, got %s", jsonType(v))
	}
	if !strings.HasPrefix(route, "/") {
		return nil, fmt.Errorf("route_prefix: %q must start with \"/\"", route)
	}
	return &route, nil
}

// deploymentNames lists the names of the deployments entry; without one, the application has a
// single deployment named after the last component of its import path.
func deploymentNames(spec map[string]any, importPath string) ([]string, error) {
	v, present := spec["deployments"]
	if !present || v == nil {
		return []string{deploymentFromImportPath(importPath)}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("deployments: must be a list, got %s", jsonType(v))
	}
	names := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, item := range list {
		d, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("deployments[%d]: must be an object, got %s", i, jsonType(item))
		}
		name, err := optionalString(d, "name", "")
		if err != nil {
			return nil, fmt.Errorf("deployments[%d]: %w", i, err)
		}
		if name == "" {
			return nil, fmt.Errorf("deployments[%d]: name: field required", i)
		}
		if seen[name] {
			return nil, fmt.Errorf("deployments: found multiple deployments named %q", name)
		}
		seen[name] = true
		names = append(names, name)
	}
	if len(names) == 0 {
		return []string{deploymentFromImportPath(importPath)}, nil
	}
	return names, nil
}

// deploymentReplicas reads each deployment's num_replicas: 1 when absent or null, as in Ray.
// An autoscaling deployment (num_replicas "auto", or an autoscaling_config) keeps the replicas
// Ray starts it with, initial_replicas else min_replicas else 1: the stand-in does not
// autoscale. deploymentNames has checked the entries' shape.
func deploymentReplicas(spec map[string]any, names []string) (map[string]int, error) {
	out := make(map[string]int, len(names))
	for _, name := range names {
		out[name] = 1
	}
	list, _ := spec["deployments"].([]any)
	for i, item := range list {
		d, _ := item.(map[string]any)
		name, _ := d["name"].(string)
		n, err := numReplicas(d)
		if err != nil {
			return nil, fmt.Errorf("deployments[%d]: %w", i, err)
		}
		out[name] = n
	}
	return out, nil
}

// numReplicas is the replicas one deployments entry starts with.
func numReplicas(d map[string]any) (int, error) {
	v := d["num_replicas"]
	autoscaling, _ := d["autoscaling_config"].(map[string]any)
	switch n := v.(type) {
	case nil:
	case float64:
		if n != float64(int(n)) || n < 1 {
			return 0, fmt.Errorf("num_replicas: must be a positive integer, got %v", n)
		}
		if autoscaling == nil {
			return int(n), nil
		}
	case string:
		if n != "auto" {
			return 0, fmt.Errorf("num_replicas: must be a positive integer or \"auto\", got %q", n)
		}
		if autoscaling == nil {
			return 1, nil
		}
	default:
		return 0, fmt.Errorf("num_replicas: must be a positive integer or \"auto\", got %s", jsonType(v))
	}
	for _, key := range []string{"initial_replicas", "min_replicas"} {
		if n, ok := autoscaling[key].(float64); ok && n >= 0 && n == float64(int(n)) {
			return int(n), nil
		}
	}
	return 1, nil
}

// deploymentFromImportPath is the last component of "module.sub:attr" or "module.sub.attr".
func deploymentFromImportPath(importPath string) string {
	name := importPath[strings.LastIndexAny(importPath, ".:")+1:]
	if name == "" {
		return defaultAppName
	}
	return name
}

// optionalString reads key from obj: def when absent or null, an error when not a string.
func optionalString(obj map[string]any, key, def string) (string, error) {
	v, present := obj[key]
	if !present || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: must be a string, got %s", key, jsonType(v))
	}
	return s, nil
}

// jsonType names the JSON type of a decoded value, for error messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
