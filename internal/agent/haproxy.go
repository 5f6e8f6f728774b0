package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// HAProxy's agent check (configuration manual, "agent-check") connects to the agent's port,
// reads one line and closes. The line is words separated by spaces: "75%" sets the weight
// to that share of the server's configured weight, "up"/"down" its operational state (the
// health check's), "ready"/"drain"/"maint" its administrative state. Only the agent can undo
// what it set, so every healthy answer says "up" (or "ready" in drain mode).

// recentAnswers is how many answers /status keeps.
const recentAnswers = 32

// serveAgentCheck accepts agent-check connections once the first measure is done (until
// then a check connects and waits: HAProxy does not count an agent that does not answer as
// a failure, while an early "down" would flap a healthy server on an agent restart).
func (a *Agent) serveAgentCheck(parent context.Context) (stop func(), addr string, err error) {
	ln, err := listen(a.o.AgentCheckListen)
	if err != nil {
		return nil, "", err
	}
	// Answers in flight finish when the agent stops; stop ends them.
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-a.ready:
		case <-ctx.Done():
			return
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					a.log.Warnf("agent: agent-check listener: %v", err)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.answerAgentCheck(ctx, c)
			}()
		}
	}()
	return func() {
		cancel()
		ln.Close()
		wg.Wait()
	}, ln.Addr().String(), nil
}

// allowed says whether a client may ask: any client of a loopback listener; otherwise the
// --agent-check-allow list.
func (a *Agent) allowed(remote net.Addr) bool {
	if len(a.o.AgentCheckAllow) == 0 {
		return true
	}
	ap, err := netip.ParseAddrPort(remote.String())
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range a.o.AgentCheckAllow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (a *Agent) answerAgentCheck(ctx context.Context, c net.Conn) {
	defer c.Close()
	if !a.allowed(c.RemoteAddr()) {
		a.mu.Lock()
		a.st.AgentCheck.Refused++
		n := a.st.AgentCheck.Refused
		a.mu.Unlock()
		if n == 1 || n%100 == 0 {
			a.log.Warnf("agent: refused an agent check from %s (not in --agent-check-allow; %d refused so far)", c.RemoteAddr(), n)
		}
		return
	}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	text := a.agentAnswer(ctx, c.RemoteAddr().String())
	if _, err := c.Write([]byte(text + "\n")); err != nil {
		return
	}
	// Close our side first and drain what the proxy may have sent (agent-send): closing a
	// socket with unread data resets it, and a reset can discard the answer at the proxy.
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}
}

// agentAnswer is the line for HAProxy, recorded in /status.
func (a *Agent) agentAnswer(ctx context.Context, from string) string {
	err := a.alive(ctx)
	st := a.Status()
	gone := err != nil || st.State == Starting || st.State == Down
	var text string
	weight := st.Weight
	switch {
	case gone && a.o.AgentCheckWhenGone == WhenGoneDrain:
		text, weight = "drain", 0
	case gone:
		reason := st.ReadyNote
		if err != nil {
			reason = "the server does not answer: " + err.Error()
		}
		text, weight = "down #"+agentDescription(reason), 0
	case a.o.AgentCheckWhenGone == WhenGoneDrain:
		text = fmt.Sprintf("%d%% ready", weight)
	default:
		text = fmt.Sprintf("%d%% up", weight)
	}
	a.mu.Lock()
	ac := a.st.AgentCheck
	ac.Answers++
	ac.Recent = append(ac.Recent, Answer{Seq: ac.Answers, At: time.Now().UTC(), Text: text, Weight: weight, Coverage: st.Coverage.Coverage, From: from})
	if len(ac.Recent) > recentAnswers {
		ac.Recent = ac.Recent[len(ac.Recent)-recentAnswers:]
	}
	a.mu.Unlock()
	return text
}

// agentDescription is a reason HAProxy shows after "#": printable ASCII, one line, short.
func agentDescription(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 120 {
			break
		}
		if r < 0x20 || r > 0x7e {
			r = ' '
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
