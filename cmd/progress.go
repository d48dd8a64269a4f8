package cmd

import (
	"sync"

	"github.com/schollz/progressbar/v3"
)

// progress draws a byte progress bar on a terminal only: never under -o
// json, --quiet, or when stdout is not a TTY (cron, pipes).
type progress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newProgress(g *globals, what string, total int64) *progress {
	return newBar(g, what, total, true)
}

// newCountProgress counts units of work (partitions) instead of bytes.
func newCountProgress(g *globals, what string, total int64) *progress {
	return newBar(g, what, total, false)
}

func newBar(g *globals, what string, total int64, bytes bool) *progress {
	p := &progress{}
	if !g.isTTY || g.json() || g.cfg.Quiet {
		return p
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(g.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)
	return p
}

func (p *progress) add(n int64) {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	_ = p.bar.Add64(n)
	p.mu.Unlock()
}

func (p *progress) done() {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	_ = p.bar.Finish()
	p.bar = nil
	p.mu.Unlock()
}
