package s3server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Version is the versitygw release the harness is written for.
const Version = "v1.8.0"

// Install is the command that installs the versitygw binary.
const Install = "go install github.com/versity/versitygw/cmd/versitygw@" + Version

// Versitygw is versitygw's posix backend on a temporary directory.
var Versitygw = &Impl{
	Name:         "versitygw",
	Version:      Version,
	Install:      Install,
	env:          "VERSITYGW",
	exe:          "versitygw",
	module:       "github.com/versity/versitygw",
	serverHeader: "VERSITYGW",
	launch:       launchVersitygw,
}

func launchVersitygw(impl *Impl, bin string) (*gateway, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "nereus-versitygw-")
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	g := &gateway{impl: impl, bin: bin, dir: dir, endpoint: "http://" + addr, grace: 5 * time.Second}
	// Credentials go through the environment, not argv (ps shows argv).
	// --keep-alive: without it every response says "Connection: close"
	// and each request opens a new TCP connection.
	g.cmd = exec.Command(bin, "--port", addr, "--quiet", "--keep-alive", "posix", dir)
	g.cmd.Env = append(os.Environ(),
		"ROOT_ACCESS_KEY_ID="+accessKey,
		"ROOT_SECRET_ACCESS_KEY="+secretKey,
		"VGW_REGION="+region)
	if err := g.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Ready when it answers HTTP (any status will do).
	hc := &http.Client{Timeout: time.Second}
	err = g.wait(20*time.Second, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.endpoint+"/", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
	if err != nil {
		g.stop()
		return nil, err
	}
	return g, nil
}
