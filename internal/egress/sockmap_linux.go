package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The kernel relay moves the bytes a sandbox client sends (the upload
// direction) from the handed-over socket to the upstream socket inside the
// kernel: both are put in BPF SOCKHASH maps and an sk_skb verdict program
// redirects every skb the client socket receives to the upstream socket's
// egress. See kernelRelay for the contract and why only one direction.

// kernelLimit caps, per tunnel, the bytes the kernel holds for the upload
// direction outside the client socket's own receive buffer: redirected to the
// upstream socket and not yet acknowledged by the upstream's peer (queued for
// its send buffer, in it, or in flight). A redirected skb leaves the client
// socket's receive queue and stops counting against its receive buffer, so
// TCP keeps the client's window open however slowly the upstream drains;
// without a cap a client flooding an upstream that never reads would queue
// without bound. Past the cap the program passes skbs to the client socket's
// own queue instead, where they are charged to its receive buffer and close
// its window, and the proxy copies them on (see kernelRelay).
var kernelLimit int32 = 16 << 20

// kernelState is the program's per-tunnel record, keyed by the client
// socket's cookie; only the program writes it. Offsets are what it reads.
type kernelState struct {
	Sent   uint64 // bytes redirected to the upstream socket
	Passed uint64 // bytes passed to the client socket's own queue, for the proxy to copy
	Spill  uint32 // 1 while skbs are passed, not redirected
	_      uint32
}

const (
	stSent   = 0
	stPassed = 8
	stSpill  = 16
	stSize   = 24
)

// kernelCtl is the proxy's per-tunnel record, keyed like kernelState; only
// the proxy writes it (a whole value at a time, which the program sees
// atomically).
type kernelCtl struct {
	Peer     uint64 // the upstream socket's cookie, its key in the upstream map
	Written  uint64 // bytes the proxy has written (or is writing) to the upstream socket
	ResumeAt uint64 // redirect again once Passed equals this (see kernelRelay)
}

const (
	ctPeer     = 0
	ctWritten  = 8
	ctResumeAt = 16
	ctSize     = 24
)

// never is a ResumeAt that Passed does not reach.
const never = ^uint64(0)

// bytesAckedOffset finds bytes_acked in the running kernel's struct
// tcp_sock, from its BTF: the program reads it through the pointer
// bpf_skc_to_tcp_sock returns (bpf_tcp_sock is not offered to sk_skb
// programs).
func bytesAckedOffset() (int16, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	var ts *btf.Struct
	if err := spec.TypeByName("tcp_sock", &ts); err != nil {
		return 0, fmt.Errorf("finding struct tcp_sock in the kernel's BTF: %w", err)
	}
	for _, m := range ts.Members {
		if m.Name != "bytes_acked" {
			continue
		}
		if sz, err := btf.Sizeof(m.Type); err != nil || sz != 8 || m.BitfieldSize != 0 || m.Offset%8 != 0 {
			return 0, fmt.Errorf("tcp_sock.bytes_acked is not a u64 (size %d): %w", sz, errors.Join(err, errors.ErrUnsupported))
		}
		return int16(m.Offset.Bytes()), nil
	}
	return 0, errors.New("struct tcp_sock has no bytes_acked")
}

// kernelMaps is the loaded program and its maps, shared by every proxy in
// the process.
type kernelMaps struct {
	clients   *ebpf.Map // SOCKHASH, client sockets by cookie; the program is attached here
	upstreams *ebpf.Map // SOCKHASH, upstream sockets by cookie; redirect targets only
	state     *ebpf.Map // HASH, kernelState by client cookie
	ctl       *ebpf.Map // HASH, kernelCtl by client cookie
	prog      *ebpf.Program
}

const kernelMapEntries = 4096

var (
	kernelOnce sync.Once
	kernelK    *kernelMaps
	kernelErr  error
)

// loadKernel loads the program and maps once per process. The error says
// why the kernel relay is unavailable (no CAP_BPF or CAP_NET_ADMIN, an old
// kernel) and every tunnel then uses the copy relay.
func loadKernel() (*kernelMaps, error) {
	kernelOnce.Do(func() { kernelK, kernelErr = newKernelMaps() })
	return kernelK, kernelErr
}

func newKernelMaps() (_ *kernelMaps, err error) {
	if v := os.Getenv("KLIMIT"); v != "" {
		fmt.Sscan(v, &kernelLimit)
	}
	k := &kernelMaps{}
	defer func() {
		if err != nil {
			k.close()
		}
	}()
	sockhash := func(name string) (*ebpf.Map, error) {
		return ebpf.NewMap(&ebpf.MapSpec{Name: name, Type: ebpf.SockHash, KeySize: 8, ValueSize: 8, MaxEntries: kernelMapEntries})
	}
	if k.clients, err = sockhash("airlock_clients"); err != nil {
		return nil, fmt.Errorf("creating the client socket map: %w", err)
	}
	if k.upstreams, err = sockhash("airlock_upstrm"); err != nil {
		return nil, fmt.Errorf("creating the upstream socket map: %w", err)
	}
	if k.state, err = ebpf.NewMap(&ebpf.MapSpec{Name: "airlock_state", Type: ebpf.Hash, KeySize: 8, ValueSize: stSize, MaxEntries: kernelMapEntries}); err != nil {
		return nil, fmt.Errorf("creating the tunnel state map: %w", err)
	}
	if k.ctl, err = ebpf.NewMap(&ebpf.MapSpec{Name: "airlock_ctl", Type: ebpf.Hash, KeySize: 8, ValueSize: ctSize, MaxEntries: kernelMapEntries}); err != nil {
		return nil, fmt.Errorf("creating the tunnel control map: %w", err)
	}
	acked, err := bytesAckedOffset()
	if err != nil {
		return nil, err
	}
	if k.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "airlock_upload",
		Type:         ebpf.SkSKB,
		AttachType:   ebpf.AttachSkSKBVerdict,
		License:      "Dual BSD/GPL",
		Instructions: verdictProgram(k.upstreams.FD(), k.state.FD(), k.ctl.FD(), acked),
	}); err != nil {
		return nil, fmt.Errorf("loading the verdict program: %w", err)
	}
	if err := link.RawAttachProgram(link.RawAttachProgramOptions{Target: k.clients.FD(), Program: k.prog, Attach: ebpf.AttachSkSKBVerdict}); err != nil {
		return nil, fmt.Errorf("attaching the verdict program: %w", err)
	}
	return k, nil
}

func (k *kernelMaps) close() {
	for _, c := range []interface{ Close() error }{k.prog, k.clients, k.upstreams, k.state, k.ctl} {
		if c != nil && !isNilCloser(c) {
			c.Close()
		}
	}
}

func isNilCloser(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case *ebpf.Map:
		return v == nil
	case *ebpf.Program:
		return v == nil
	}
	return false
}

// verdictProgram is, in C:
//
//	int verdict(struct __sk_buff *skb) {
//		u32 len = skb->len;
//		if (len == 0)                  // a bare FIN: no bytes to move
//			return SK_DROP;
//		u64 me = bpf_get_socket_cookie(skb);
//		struct state *st = bpf_map_lookup_elem(&state, &me);
//		struct ctl *ct = bpf_map_lookup_elem(&ctl, &me);
//		if (!st || !ct)                // not a tunnel's (being torn down)
//			return SK_PASS;
//		if (st->spill && st->passed != ct->resume_at)
//			goto pass;
//		u64 peer = ct->peer;
//		struct bpf_sock *sk = bpf_map_lookup_elem(&upstreams, &peer);
//		if (!sk)
//			goto spill;
//		struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
//		u64 acked = tp ? tp->bytes_acked : 0;
//		bpf_sk_release(sk);
//		if (ct->written + st->sent + len - acked > LIMIT)
//			goto spill;
//		st->spill = 0;
//		st->sent += len;
//		return bpf_sk_redirect_hash(skb, &upstreams, &peer, 0);
//	spill:
//		st->spill = 1;
//	pass:
//		st->passed += len;
//		return SK_PASS;
//	}
func verdictProgram(upstreams, state, ctl int, offBytesAcked int16) asm.Instructions {
	const (
		skPass = 1
		skDrop = 0
	)
	// r6 skb, r7 len, r8 st, r9 ct, then sk; stack: -8 me, -16 peer, -24 acked, -32 ct
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word), // len
		asm.JNE.Imm(asm.R7, 0, "nonempty"),
		asm.Mov.Imm(asm.R0, skDrop),
		asm.Return(),

		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("nonempty"),
		asm.FnGetSocketCookie.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, state),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "foreign"),
		asm.Mov.Reg(asm.R8, asm.R0), // st
		asm.LoadMapPtr(asm.R1, ctl),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "foreign"),
		asm.Mov.Reg(asm.R9, asm.R0), // ct

		asm.LoadMem(asm.R1, asm.R8, stSpill, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "redirect"),
		asm.LoadMem(asm.R1, asm.R8, stPassed, asm.DWord),
		asm.LoadMem(asm.R2, asm.R9, ctResumeAt, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, "pass"),

		asm.LoadMem(asm.R1, asm.R9, ctPeer, asm.DWord).WithSymbol("redirect"),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, -32, asm.R9, asm.DWord), // keep ct across the sk reference
		asm.LoadMapPtr(asm.R1, upstreams),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16),
		asm.FnMapLookupElem.Call(), // sk, a reference
		asm.JEq.Imm(asm.R0, 0, "spill"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnSkcToTcpSock.Call(),
		asm.Mov.Imm(asm.R2, 0),
		asm.StoreMem(asm.RFP, -24, asm.R2, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, "release"),
		asm.LoadMem(asm.R2, asm.R0, offBytesAcked, asm.DWord),
		asm.StoreMem(asm.RFP, -24, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R9).WithSymbol("release"),
		asm.FnSkRelease.Call(),
		asm.LoadMem(asm.R9, asm.RFP, -32, asm.DWord), // ct again

		asm.LoadMem(asm.R1, asm.R8, stSent, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R7), // sent + len
		asm.LoadMem(asm.R3, asm.R9, ctWritten, asm.DWord),
		asm.Add.Reg(asm.R3, asm.R1), // written + sent + len
		asm.LoadMem(asm.R2, asm.RFP, -24, asm.DWord),
		asm.Sub.Reg(asm.R3, asm.R2), // minus acked: bytes held
		asm.JGT.Imm(asm.R3, kernelLimit, "spill"),
		asm.StoreMem(asm.R8, stSent, asm.R1, asm.DWord),
		asm.StoreImm(asm.R8, stSpill, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, upstreams),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnSkRedirectHash.Call(),
		asm.Return(),

		asm.StoreImm(asm.R8, stSpill, 1, asm.Word).WithSymbol("spill"),
		asm.LoadMem(asm.R1, asm.R8, stPassed, asm.DWord).WithSymbol("pass"),
		asm.Add.Reg(asm.R1, asm.R7),
		asm.StoreMem(asm.R8, stPassed, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, skPass).WithSymbol("foreign"),
		asm.Return(),
	}
}

// kernelUpload sets the tunnel c↔up up so the kernel moves the client's
// bytes upstream, if it can: c must be a handed-over socket, up a TCP
// connection, and the program loaded (see loadKernel; the reason it is not
// is logged once per proxy). It returns the upload direction's pipe, which
// replaces p.pipe(up, c, act), and stop, which takes both sockets out of the
// maps; or nil, nil, having changed nothing, and the copy relay runs.
//
// How the upload moves, and why it stays correct and bounded:
//
//   - Both sockets go into the maps with the program in "spill" mode: every
//     skb the client socket receives is passed to its own queue, charged to
//     its receive buffer, and the pipe reads and writes it upstream as the
//     copy relay does. Bytes the client sent before the sockets went in are
//     still on that queue, so they are copied first, in order.
//   - The pipe asks the program to redirect again (ResumeAt) once it has
//     read every byte the client socket received that was not redirected
//     (tcpi_bytes_received equals what it read plus Sent) and written it
//     upstream; the program switches only if it has passed nothing since
//     (Passed still equals ResumeAt), so a redirected byte never overtakes
//     a copied one. A sandbox that reads the socket itself only keeps its
//     tunnel on the copy path.
//   - Redirected, not yet acknowledged upstream bytes are capped at
//     kernelLimit (see there); past it the program spills again.
//   - EOF: the pipe reads the client socket only when the program passed
//     something or the socket has EOF or an error (poll wakes it for each
//     redirected skb too; the read finds nothing). At EOF it waits until
//     every redirected byte is in the upstream socket's send queue
//     (tcpi_bytes_acked + SIOCOUTQ = Written + Sent), then half-closes it,
//     so no byte is lost behind the FIN.
//   - Idle: when the read deadline passes with nothing to read, progress is
//     the client socket's tcpi_bytes_received and the upstream's
//     tcpi_bytes_acked.
//
// The download direction stays with the copy relay: a socket that is a
// redirect target holds the skbs redirected to it on the same queue as the
// ones its program passes, where they are not charged to its receive
// buffer, so redirecting both ways would let a sandbox that stops reading
// and floods at once queue without bound.
func (p *Proxy) kernelUpload(c, up net.Conn) (run func(*activity) error, stop func()) {
	hc, ok := c.(*handedConn)
	if !ok {
		return nil, nil
	}
	utc, ok := up.(*net.TCPConn)
	if !ok {
		return nil, nil
	}
	if p.o.NoKernelRelay || os.Getenv("KOFF") != "" {
		return nil, nil
	}
	k, err := loadKernel()
	if err != nil {
		p.kernelOnce.Do(func() {
			p.o.Logger.Debug("egress kernel relay unavailable, copying instead", "sandbox", p.o.Sandbox, "err", err)
		})
		return nil, nil
	}
	urc, err := utc.SyscallConn()
	if err != nil {
		return nil, nil
	}
	t := &kernelTunnel{k: k, c: hc, up: utc, urc: urc, idle: p.o.IdleTimeout}
	var ierr error
	cerr := hc.rc.Control(func(cfd uintptr) {
		uerr := urc.Control(func(ufd uintptr) { ierr = t.insert(int(cfd), int(ufd)) })
		if uerr != nil {
			ierr = uerr
		}
	})
	if cerr != nil || ierr != nil {
		p.o.Logger.Debug("egress kernel relay not used for this tunnel", "sandbox", p.o.Sandbox, "err", errors.Join(cerr, ierr))
		return nil, nil
	}
	return t.pipe, t.remove
}

// kernelTunnel is one tunnel whose upload the kernel moves.
type kernelTunnel struct {
	k    *kernelMaps
	c    *handedConn
	up   *net.TCPConn
	urc  syscall.RawConn
	idle time.Duration

	me, peer uint64    // the client's and the upstream's socket cookies
	ctl      kernelCtl // as last written to the map
	in       []func()  // undoes each insertion, in reverse
	consumed uint64    // bytes the program passed that copy has consumed
	eof      bool      // the upload has ended with the client's EOF
}

// insert puts the tunnel in the maps, or leaves them as they were.
func (t *kernelTunnel) insert(cfd, ufd int) (err error) {
	defer func() {
		if err != nil {
			t.remove()
		}
	}()
	if t.me, err = unix.GetsockoptUint64(cfd, unix.SOL_SOCKET, unix.SO_COOKIE); err != nil {
		return fmt.Errorf("client socket cookie: %w", err)
	}
	if t.peer, err = unix.GetsockoptUint64(ufd, unix.SOL_SOCKET, unix.SO_COOKIE); err != nil {
		return fmt.Errorf("upstream socket cookie: %w", err)
	}
	if v := os.Getenv("KSNDBUF"); v != "" {
		var n int
		fmt.Sscan(v, &n)
		if err := unix.SetsockoptInt(ufd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, n); err != nil {
			return fmt.Errorf("upstream SO_SNDBUF: %w", err)
		}
	}
	base, err := written(ufd)
	if err != nil {
		return err
	}
	// A fixed receive buffer (not autotuned) bounds what the program passes
	// when it spills, and so the buffer copy peeks through.
	if err := setRcvbuf(cfd); err != nil {
		return fmt.Errorf("client SO_RCVBUF: %w", err)
	}
	t.ctl = kernelCtl{Peer: t.peer, Written: base, ResumeAt: never}
	steps := []struct {
		m   *ebpf.Map
		key uint64
		val any
	}{
		{t.k.state, t.me, kernelState{}},
		{t.k.ctl, t.me, t.ctl},
		{t.k.upstreams, t.peer, uint64(ufd)},
		{t.k.clients, t.me, uint64(cfd)},
	}
	for _, s := range steps {
		if err := s.m.Update(s.key, s.val, ebpf.UpdateNoExist); err != nil {
			return fmt.Errorf("adding to %s: %w", s.m, err)
		}
		m, key := s.m, s.key
		t.in = append(t.in, func() { m.Delete(key) })
	}
	return nil
}

// remove takes the tunnel out of the maps, the client socket first so the
// program no longer runs for it. Bytes redirected and not yet sent are
// dropped: call it once the tunnel is over.
func (t *kernelTunnel) remove() {
	if os.Getenv("KDEBUG") != "" {
		var st kernelState
		t.k.state.Lookup(t.me, &st)
		fmt.Fprintf(os.Stderr, "KDEBUG wakes=%d spills=%d copy=%v drain=%v ", kdebugWakes.Swap(0), kdebugSpills.Swap(0), time.Duration(kdebugCopy.Swap(0)), time.Duration(kdebugDrain.Swap(0)))
		fmt.Fprintf(os.Stderr, "KDEBUG sent=%d passed=%d spill=%d consumed=%d written=%d\n", st.Sent, st.Passed, st.Spill, t.consumed, t.ctl.Written)
	}
	for i := len(t.in) - 1; i >= 0; i-- {
		t.in[i]()
	}
	t.in = nil
}

// pipe is the upload direction (see kernelUpload). It waits on the client
// socket, which becomes readable when the program passes an skb (spills) and
// at EOF, with a read deadline for the idle check.
func (t *kernelTunnel) pipe(act *activity) error {
	var seen progress
	var one [1]byte
	period := min(t.idle/2, 100*time.Millisecond)
	for {
		t.c.SetReadDeadline(time.Now().Add(period))
		n, err := t.c.recv(one[:], unix.MSG_PEEK)
		kdebugWakes.Add(1)
		switch {
		case n > 0:
			st, err := t.state()
			if err != nil {
				return err
			}
			if st.Spill == 0 {
				// Bytes that reached the socket before it went into the
				// map: have the program take them.
				if err := t.kick(); err != nil {
					return err
				}
				continue
			}
			if err := t.copy(act, &seen); err != nil {
				return err
			}
			if t.eof {
				return nil
			}
		case errors.Is(err, io.EOF):
			if err := t.drain(act, &seen); err != nil {
				return err
			}
			closeWrite(t.up)
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if err := t.kick(); err != nil {
				return err
			}
			acked, err := t.upAcked()
			if err != nil {
				return err
			}
			if t.moved(&seen, acked) {
				act.touch()
			} else if act.since() >= t.idle {
				return errIdle
			}
		default:
			return err
		}
	}
}

var kdebugWakes, kdebugDrain, kdebugCopy, kdebugSpills atomic.Int64

// kick has the program run for bytes already on the client socket's
// receive queue (setting SO_RCVLOWAT calls the socket's data-ready hook):
// bytes that arrived before the socket went into the map wait there
// otherwise until more arrive.
func (t *kernelTunnel) kick() error {
	var serr error
	if err := t.c.rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, 1) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("client SO_RCVLOWAT: %w", serr)
	}
	return nil
}

// copy runs while the program passes skbs instead of redirecting them,
// until it redirects again (copy returns and the pipe goes back to
// watching) or the client's EOF (t.eof). Each round peeks at what was
// passed, writes it upstream once every redirected byte is there, asks the
// program to redirect again from the byte after it (ResumeAt), and only then
// consumes it: the client's window, closed by the passed bytes, opens only
// once the request to resume is in place, so a client that sends without
// pause still gets back to the redirect path.
func (t *kernelTunnel) copy(act *activity, seen *progress) error {
	t0 := time.Now()
	kdebugSpills.Add(1)
	defer func() { kdebugCopy.Add(int64(time.Since(t0))) }()
	size, err := t.rcvbuf()
	if err != nil {
		return err
	}
	buf := make([]byte, size)
	for {
		t.c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, err := t.c.recv(buf, unix.MSG_PEEK)
		if n > 0 {
			act.touch()
			if err := t.drain(act, seen); err != nil {
				return err
			}
			if err := t.write(buf[:n]); err != nil {
				return err
			}
			t.ctl.ResumeAt = t.consumed + uint64(n)
			if err := t.k.ctl.Update(t.me, t.ctl, ebpf.UpdateExist); err != nil {
				return fmt.Errorf("updating the tunnel control map: %w", err)
			}
			// What was peeked is there to read, unless the sandbox read it
			// itself through its own descriptor of the socket.
			t.c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			m, err := t.c.recv(buf[:n], 0)
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return err
			}
			t.consumed += uint64(m)
			continue
		}
		switch {
		case errors.Is(err, io.EOF):
			if err := t.drain(act, seen); err != nil {
				return err
			}
			closeWrite(t.up)
			t.eof = true
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			st, err := t.state()
			if err != nil {
				return err
			}
			if st.Spill == 0 {
				return nil
			}
			acked, err := t.upAcked()
			if err != nil {
				return err
			}
			if t.moved(seen, acked) {
				act.touch()
			} else if act.since() >= t.idle {
				return errIdle
			}
		default:
			return err
		}
	}
}

// rcvbuf is the client socket's receive buffer, which bounds what the
// program passes before the client's window closes.
func (t *kernelTunnel) rcvbuf() (int, error) {
	var n int
	var gerr error
	if err := t.c.rc.Control(func(fd uintptr) { n, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) }); err != nil {
		return 0, err
	}
	if gerr != nil {
		return 0, fmt.Errorf("client SO_RCVBUF: %w", gerr)
	}
	return min(max(n, 64<<10), spillBufMax), nil
}

// spillRcvbuf is the receive buffer asked for on the client socket (the
// kernel doubles it).
const spillRcvbuf = 1 << 20

// spillBufMax caps the buffer a spilling tunnel peeks through. A sandbox
// that raises its socket's receive buffer past it only keeps its own tunnel
// on the copy path longer.
const spillBufMax = 4 << 20

func (t *kernelTunnel) state() (kernelState, error) {
	var st kernelState
	if err := t.k.state.Lookup(t.me, &st); err != nil {
		return st, fmt.Errorf("reading the tunnel state map: %w", err)
	}
	return st, nil
}

func (t *kernelTunnel) upAcked() (uint64, error) {
	var info *unix.TCPInfo
	var ierr error
	if err := t.urc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return 0, err
	}
	if ierr != nil {
		return 0, fmt.Errorf("upstream TCP_INFO: %w", ierr)
	}
	return info.Bytes_acked, nil
}

// moved reports whether the upstream's peer acknowledged bytes since the
// last call. (Bytes the client sends show up there or, while spilling, as
// reads.)
func (t *kernelTunnel) moved(seen *progress, acked uint64) bool {
	m := acked != seen.acked
	seen.acked = acked
	return m
}

// write copies b upstream, counting it in Written first so the program's
// cap counts it while it is being written.
func (t *kernelTunnel) write(b []byte) error {
	t.ctl.Written += uint64(len(b))
	if err := t.k.ctl.Update(t.me, t.ctl, ebpf.UpdateExist); err != nil {
		return fmt.Errorf("updating the tunnel control map: %w", err)
	}
	_, err := t.up.Write(b)
	return err
}

// drain waits until every byte the program redirected is in the upstream
// socket's send queue.
func (t *kernelTunnel) drain(act *activity, seen *progress) error {
	t0 := time.Now()
	defer func() { kdebugDrain.Add(int64(time.Since(t0))) }()
	wait := 50 * time.Microsecond
	var timer *time.Timer
	for {
		var st kernelState
		if err := t.k.state.Lookup(t.me, &st); err != nil {
			return fmt.Errorf("reading the tunnel state map: %w", err)
		}
		var w uint64
		var werr error
		if err := t.urc.Control(func(fd uintptr) { w, werr = written(int(fd)) }); err != nil {
			return err
		}
		if werr != nil {
			return werr
		}
		if w >= t.ctl.Written+st.Sent {
			return nil
		}
		acked, err := t.upAcked()
		if err != nil {
			return err
		}
		if t.moved(seen, acked) {
			act.touch()
		} else if act.since() >= t.idle {
			return errIdle
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		<-timer.C
		wait = min(2*wait, time.Millisecond)
	}
}

// progress is what the idle check last saw of the kernel's part.
type progress struct{ acked uint64 }

// written is how many bytes have ever been written to the TCP socket fd:
// those its peer acknowledged plus those still queued (SIOCOUTQ), read so
// that an acknowledgement arriving in between cannot skew the sum.
func written(fd int) (uint64, error) {
	for range 100 {
		a, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return 0, fmt.Errorf("TCP_INFO: %w", err)
		}
		q, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
		if err != nil {
			return 0, fmt.Errorf("SIOCOUTQ: %w", err)
		}
		b, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return 0, fmt.Errorf("TCP_INFO: %w", err)
		}
		if a.Bytes_acked == b.Bytes_acked {
			return a.Bytes_acked + uint64(q), nil
		}
	}
	return 0, errors.New("upstream send queue did not hold still long enough to be read")
}

func setRcvbuf(fd int) error {
	if os.Getenv("KNORCV") != "" {
		return nil
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, spillRcvbuf)
}
