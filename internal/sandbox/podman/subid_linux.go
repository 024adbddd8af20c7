package podman

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// subIDFiles are where the host hands out subordinate ids (shadow-utils).
var subIDFiles = []string{"/etc/subuid", "/etc/subgid"}

// checkSubIDs refuses a host where a subordinate id range of files
// overlaps the containers' ids (IDBase, IDCount). A missing file gives no
// one any range.
func checkSubIDs(files []string) error {
	for _, path := range files {
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		err = func() error {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := strings.TrimSpace(sc.Text())
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				parts := strings.Split(line, ":")
				if len(parts) != 3 {
					continue
				}
				start, err1 := strconv.ParseUint(parts[1], 10, 64)
				count, err2 := strconv.ParseUint(parts[2], 10, 64)
				if err1 != nil || err2 != nil || count == 0 {
					continue
				}
				if start < IDBase+IDCount && IDBase < start+count {
					return &sandbox.MissingFeatureError{
						Feature: "container ids no host user may map",
						Reason:  fmt.Sprintf("%s:%d gives %q the ids %d-%d, which overlap the ids containers run as (%d-%d): that user could reach every container's processes and files", path, n, parts[0], start, start+count-1, IDBase, IDBase+IDCount-1),
						Fix:     "move that range elsewhere in " + path,
					}
				}
			}
			return sc.Err()
		}()
		if err != nil {
			return err
		}
	}
	return nil
}
