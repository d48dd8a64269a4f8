package cmd

import (
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is the one progress API of the commands: a bar with its total,
// rate and time left, drawn on stderr only when stderr is a terminal, and
// never under -o json or -o yaml, --quiet or --no-progress (cron, pipes and
// scripts see nothing). A nil or undrawn progress does nothing, so a
// command calls it unconditionally:
//
//	p := g.progress("partitions", int64(len(tps)))
//	defer p.done()
//	... p.add(1)
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
	max int64
}

// unitBytes makes g.progress count bytes (shown as KB/MB, rate in MB/s).
const unitBytes = "bytes"

// progress starts a bar counting unit ("bytes", or a unit of work such as
// "partitions", "records", "objects") up to total; a total below 0 is not
// known yet (grow adds to it as it is learnt).
func (g *globals) progress(unit string, total int64) *progress {
	return newBar(g, unit, total, unit == unitBytes)
}

// newProgress counts bytes (kept for callers of the first API).
func newProgress(g *globals, what string, total int64) *progress {
	return newBar(g, what, total, true)
}

// drawsProgress reports whether this run draws progress at all.
func (g *globals) drawsProgress() bool {
	return g.stderrTTY && !g.machineOutput() && !g.cfg.Quiet && !g.cfg.NoProgress
}

// progressThrottle is the least time between two redraws.
var progressThrottle = 100 * time.Millisecond

func newBar(g *globals, what string, total int64, bytes bool) *progress {
	p := &progress{max: total}
	if !g.drawsProgress() {
		return p
	}
	max := total
	if max == 0 {
		// a bar of 0 draws 100% at once; unknown until grown
		max = -1
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(g.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(progressThrottle),
		progressbar.OptionClearOnFinish(),
		// drawn at once: a bar of one step would else be cleared unseen
		progressbar.OptionSetRenderBlankState(true),
	}
	if !bytes {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(what))
	}
	p.bar = progressbar.NewOptions64(max, opts...)
	return p
}

// add counts n more units done.
func (p *progress) add(n int64) {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	_ = p.bar.Add64(n)
	p.mu.Unlock()
}

// grow adds n to the total, for work whose size is learnt as it goes
// (verify --deep learns each partition's bytes from its manifests).
func (p *progress) grow(n int64) {
	if p == nil || n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.max < 0 {
		p.max = 0
	}
	p.max += n
	if p.bar != nil {
		p.bar.ChangeMax64(p.max)
	}
}

// done clears the bar; it may be called more than once.
func (p *progress) done() {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	_ = p.bar.Finish()
	p.bar = nil
	p.mu.Unlock()
}
