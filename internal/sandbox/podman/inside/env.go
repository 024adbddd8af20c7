package inside

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxEnvBytes bounds the environment the broker hands the init.
const MaxEnvBytes = 8 << 20

// EncodeEnv is the environment env (KEY=VALUE entries) as the broker
// writes it on the init's environment pipe: each entry followed by a NUL.
func EncodeEnv(env []string) ([]byte, error) {
	var b bytes.Buffer
	for _, kv := range env {
		if i := strings.IndexByte(kv, '='); i <= 0 {
			return nil, fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("environment entry %q holds a NUL byte", kv)
		}
		b.WriteString(kv)
		b.WriteByte(0)
	}
	if b.Len() > MaxEnvBytes {
		return nil, fmt.Errorf("the environment is %d bytes, more than the %d a container takes", b.Len(), MaxEnvBytes)
	}
	return b.Bytes(), nil
}

// DecodeEnv reads EncodeEnv's form.
func DecodeEnv(data []byte) ([]string, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[len(data)-1] != 0 {
		return nil, errors.New("the environment does not end with a NUL")
	}
	var env []string
	for _, kv := range bytes.Split(data[:len(data)-1], []byte{0}) {
		if i := bytes.IndexByte(kv, '='); i <= 0 {
			return nil, fmt.Errorf("environment entry %q is not KEY=VALUE", kv)
		}
		env = append(env, string(kv))
	}
	return env, nil
}

// setEnv replaces the init's environment (Podman's, --unsetenv-all: only
// its HOSTNAME) with the one the broker writes on the pipe at descriptor
// fd (none when fd < 0), read to its end, so that the runner and the
// command get exactly the call's environment. It comes on a pipe, not as
// Podman's --env K=V: those are the podman client's command line, which
// every local user can read for as long as the call runs.
func setEnv(fd int) error {
	if fd < 0 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "environment")
	data, err := io.ReadAll(io.LimitReader(f, MaxEnvBytes+1))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the environment: %w", err)
	}
	if len(data) > MaxEnvBytes {
		return fmt.Errorf("the environment is more than %d bytes", MaxEnvBytes)
	}
	env, err := DecodeEnv(data)
	if err != nil {
		return err
	}
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("setting %s: %w", k, err)
		}
	}
	return nil
}
