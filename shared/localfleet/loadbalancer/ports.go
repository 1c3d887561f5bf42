package loadbalancer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// takenBy returns the Service holding one of ports other than key, "" when none does.
func (c *Controller) takenBy(key string, ports []int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range ports {
		if cl := c.ports[p]; cl != nil && cl.service != key {
			return cl.service
		}
	}
	return ""
}

// refuse records that key was turned away because holder has one of its ports, logging it the
// first time.
func (c *Controller) refuse(key, holder string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refused[key] {
		c.log.Printf("Service %s refused: a port of it is Service %s's on %s; no ingress until that one lets go",
			key, holder, c.opts.IP)
	}
	c.refused[key] = true
}

// forget drops key from the refused Services: it no longer asks for a load balancer.
func (c *Controller) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refused, key)
}

// release lets go of every port key holds; the Services refused before may fit now.
func (c *Controller) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	released := false
	for p, cl := range c.ports {
		if cl.service == key {
			cl.close()
			delete(c.ports, p)
			released = true
		}
	}
	if released {
		c.requeueRefusedLocked()
	}
}

// requeueRefusedLocked queues every refused Service again; c.mu is held.
func (c *Controller) requeueRefusedLocked() {
	for k := range c.refused {
		c.queue.Add(k)
	}
}

// claim makes key hold exactly ports, listening on each unless the address cannot be bound
// here. A port another process holds is an error, retried with backoff.
func (c *Controller) claim(key string, ports []int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refused, key)
	released := false
	for p, cl := range c.ports {
		if cl.service == key && !slices.Contains(ports, p) {
			cl.close()
			delete(c.ports, p)
			released = true
		}
	}
	if released {
		c.requeueRefusedLocked()
	}
	for _, p := range ports {
		if c.ports[p] != nil {
			continue
		}
		server, err := c.listen(p)
		if err != nil {
			return err
		}
		c.ports[p] = &claim{service: key, server: server}
	}
	return nil
}

// listen serves the stand-in on the controller's IP at port. It returns a nil server when the
// address is not assigned here (as when `rayfleet dev` runs outside the network namespace the
// e2e tests make): the Service still gets its ingress, and requests to it fail.
func (c *Controller) listen(port int32) (*http.Server, error) {
	addr := net.JoinHostPort(c.opts.IP, strconv.Itoa(int(port)))
	listen := func(address string) (net.Listener, error) { return net.Listen("tcp", address) }
	if c.opts.Listen != nil {
		listen = c.opts.Listen
	}
	ln, err := listen(addr)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		if !c.unbindableLogged {
			c.unbindableLogged = true
			c.log.Printf("cannot listen on %s (the address is not assigned here): Services get it as their ingress, "+
				"but requests to it will fail", c.opts.IP)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s for %s: %w", addr, c.opts.Cluster, err)
	}
	handler := c.handler(port)
	if c.opts.Backend != nil {
		handler = c.forwarder(port)
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: readHeaderTimeout}
	go func() { _ = server.Serve(ln) }()
	return server, nil
}

// close stops the claim's listener, if it has one.
func (cl *claim) close() {
	if cl.server != nil {
		_ = cl.server.Close()
	}
}

// SetFailing makes every listener answer 503 to every request, the hub's probe path included,
// while failing is true: a Serve proxy that died behind a load balancer still taking
// connections, as the gateway and the hub's probe see it. The member's API server and the
// Services' ingress are left alone. False serves again.
func (c *Controller) SetFailing(failing bool) {
	if c.failing.Swap(failing) != failing {
		c.log.Printf("serve endpoint failing: %v (injected)", failing)
	}
}

// handler answers every request on port with a Response naming who holds the port now.
func (c *Controller) handler(port int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if c.failing.Load() {
			http.Error(w, "serve endpoint of "+c.opts.Cluster+" failing (injected fault)", http.StatusServiceUnavailable)
			return
		}
		body := Response{Cluster: c.opts.Cluster}
		c.mu.Lock()
		cl := c.ports[port]
		c.mu.Unlock()
		if cl != nil {
			body.RayService, body.Revision = c.rayServiceOf(cl.service)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// rayServiceOf returns the RayService owning the Service key (namespace/name) and its
// revision annotation, both from the caches: a request costs no API call.
func (c *Controller) rayServiceOf(key string) (rayService, revision string) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return "", ""
	}
	svc, err := c.services.Services(ns).Get(name)
	if err != nil {
		return "", ""
	}
	for _, ref := range svc.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != rayServices.Group || ref.Kind != "RayService" {
			continue
		}
		rayService = ns + "/" + ref.Name
		if obj, err := c.rayMeta.ByNamespace(ns).Get(ref.Name); err == nil {
			if m, ok := obj.(metav1.Object); ok {
				revision = m.GetAnnotations()[labels.Revision]
			}
		}
		return rayService, revision
	}
	return "", ""
}
