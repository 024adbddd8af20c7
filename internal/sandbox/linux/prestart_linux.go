package linux

import (
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// prestarted is the init of a cold sandbox started ahead of its Run by
// Prestart: its cgroup made with the limits it was started for, its init
// cloned and waiting for its config, which it reads before it does
// anything else.
type prestarted struct {
	done chan struct{} // closed once the start has ended
	mem  int64         // the limits its cgroup was made with
	pids int

	// Set before done is closed; x is nil when the start failed.
	x         *box // x.cg and x.c
	t0        int64
	placement string
}

// Prestart starts, in the background, the init of the next cold sandbox
// for spec's limits, without a terminal, so that its clone and the start
// of its runtime overlap what the caller does before it calls Run (airlock
// exec opens its session meanwhile). The next Run that builds a cold
// sandbox takes the init when its memory and process limits are spec's
// and it has no terminal, and stops it otherwise; a Run that takes a warm
// sandbox leaves it; Close stops one no Run took. The init has no mount
// and no config until then: Run makes its placeholders, sends its config
// and waits for Ready as with a fresh init, and its wall time starts then.
// At most one init waits at a time: a Prestart while one waits does
// nothing, and so does one on a host that Run would refuse. (Making the
// placeholders here too was measured and not kept: on two cores they
// only contend with the caller's own work.)
func (b *Backend) Prestart(spec *sandbox.Spec) {
	if spec == nil || spec.TTY || b.hostReady() != nil {
		return
	}
	l := withDefaults(spec.Limits)
	if b.enforceable(spec, l) != nil {
		return
	}
	p := &prestarted{done: make(chan struct{}), mem: l.mem, pids: l.pids}
	b.preMu.Lock()
	if b.pre != nil || b.preClosed {
		b.preMu.Unlock()
		return
	}
	b.pre = p
	b.preMu.Unlock()
	go func() {
		defer close(p.done)
		x := &box{cfg: &initproto.Config{}}
		if b.cg.version != 0 {
			cg, err := b.newCgroup(l)
			if err != nil {
				b.log.Debug("prestarting an init", "err", err)
				return
			}
			x.cg = cg
			if cg.joinsItself() {
				x.cfg.Join = cg.name()
			}
		}
		t0, placement, err := b.launch(x)
		if err != nil {
			b.log.Debug("prestarting an init", "err", err)
			if cerr := x.cg.destroy(); cerr != nil {
				b.log.Debug("cgroup teardown", "err", cerr)
			}
			return
		}
		p.x, p.t0, p.placement = x, t0, placement
	}()
}

// pendingPrestart returns the init Prestart started, if any, which no
// later Run can take then; its start may not have ended yet (see fits).
func (b *Backend) pendingPrestart() *prestarted {
	b.preMu.Lock()
	defer b.preMu.Unlock()
	p := b.pre
	b.pre = nil
	return p
}

// fits waits until p's start has ended and reports whether it started and
// was started for l, with tty off. One that does not fit is stopped and
// torn down.
func (b *Backend) fits(p *prestarted, l limits, tty bool) bool {
	<-p.done
	if p.x == nil {
		return false
	}
	if tty || p.mem != l.mem || p.pids != l.pids {
		b.discard(p)
		return false
	}
	return true
}

// dropPrestarted stops p, which its Run did not take, once its start has
// ended.
func (b *Backend) dropPrestarted(p *prestarted) {
	<-p.done
	if p.x != nil {
		b.discard(p)
	}
}

// closePrestarted stops the init Prestart started that no Run took, and
// keeps any later Prestart from starting one.
func (b *Backend) closePrestarted() {
	b.preMu.Lock()
	p := b.pre
	b.pre = nil
	b.preClosed = true
	b.preMu.Unlock()
	if p != nil {
		b.dropPrestarted(p)
	}
}

// discard stops a prestarted init and removes its cgroup.
func (b *Backend) discard(p *prestarted) {
	p.x.kill("setup")
	_, _ = p.x.c.proc.Wait()
	if err := b.teardown(p.x); err != nil {
		b.log.Debug("tearing down a prestarted init", "err", err)
	}
}
