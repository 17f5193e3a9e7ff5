package incusmgr

import (
	"sync"

	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
)

// serialOps submits one background operation at a time on a client. The
// Incus client (v6.0.5) sets up an event listener for every operation it
// submits and, doing so, reads and writes a flag of the client without a
// lock, so two submissions at once race (`go test -race` sees it when a
// group's members fork together). Only the submission is serialized: each
// returns as soon as the daemon has the operation, and the operations
// themselves (container starts, copies) still run side by side.
type serialOps struct {
	incus.InstanceServer
	mu *sync.Mutex
}

func serialize(c incus.InstanceServer) incus.InstanceServer {
	return serialOps{InstanceServer: c, mu: &sync.Mutex{}}
}

func (s serialOps) submit(fn func() (incus.Operation, error)) (incus.Operation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn()
}

func (s serialOps) CreateInstance(i api.InstancesPost) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.CreateInstance(i) })
}

func (s serialOps) UpdateInstance(name string, i api.InstancePut, etag string) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.UpdateInstance(name, i, etag) })
}

func (s serialOps) UpdateInstanceState(name string, st api.InstanceStatePut, etag string) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.UpdateInstanceState(name, st, etag) })
}

func (s serialOps) DeleteInstance(name string) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.DeleteInstance(name) })
}

func (s serialOps) ExecInstance(name string, e api.InstanceExecPost, args *incus.InstanceExecArgs) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.ExecInstance(name, e, args) })
}

func (s serialOps) CreateInstanceSnapshot(name string, sn api.InstanceSnapshotsPost) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.CreateInstanceSnapshot(name, sn) })
}

func (s serialOps) DeleteInstanceSnapshot(name, snap string) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.DeleteInstanceSnapshot(name, snap) })
}

func (s serialOps) CreateImage(i api.ImagesPost, args *incus.ImageCreateArgs) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.CreateImage(i, args) })
}

func (s serialOps) DeleteImage(fp string) (incus.Operation, error) {
	return s.submit(func() (incus.Operation, error) { return s.InstanceServer.DeleteImage(fp) })
}
