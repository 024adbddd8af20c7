package grant

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// CredentialEntry is one row of the credential table: a file or directory
// of a home directory that holds the user's credentials (keys, tokens,
// passwords, session cookies).
type CredentialEntry struct {
	// Name is the path relative to the home directory (".ssh",
	// ".config/gh", ".docker/config.json").
	Name string
	// Dir says the entry is a directory (hidden whole).
	Dir bool
	// Holds says whose credentials it holds.
	Holds string
}

// The credential table. In every home directory a grant reaches (granted
// itself, read-only or read-write, or inside a granted tree: this user's,
// /root, one directly in /home or in a granted directory that looks like a
// home directory, isHomeDir), each existing entry is denied as paths.deny
// would deny it, hidden from the sandbox and refused to its tools, unless a
// granted path is the entry or lies inside it. docs/protected-paths.md
// shows this table; a test keeps the two the same.
var credentialTable = []CredentialEntry{
	{".ssh", true, "ssh: private keys, known hosts, agent configuration"},
	{".gnupg", true, "GnuPG: private keys"},
	{".aws", true, "AWS CLI and SDKs: access keys, SSO tokens"},
	{".azure", true, "Azure CLI: tokens"},
	{".config/gcloud", true, "Google Cloud SDK: tokens, service-account keys"},
	{".kube", true, "kubectl: cluster credentials"},
	{".docker/config.json", false, "Docker: registry credentials"},
	{".netrc", false, "curl, git, ftp: passwords for hosts"},
	{".git-credentials", false, "git's credential store"},
	{".config/git/credentials", false, "git's credential store (XDG)"},
	{".config/gh", true, "GitHub CLI: tokens"},
	{".npmrc", false, "npm: registry tokens"},
	{".yarnrc.yml", false, "yarn 2+: registry tokens"},
	{".pypirc", false, "twine: PyPI tokens"},
	{".cargo/credentials", false, "cargo: registry tokens"},
	{".cargo/credentials.toml", false, "cargo: registry tokens"},
	{".gem/credentials", false, "RubyGems: API keys"},
	{".m2/settings.xml", false, "Maven: repository passwords"},
	{".gradle/gradle.properties", false, "Gradle: repository passwords, signing keys"},
	{".terraform.d/credentials.tfrc.json", false, "Terraform: HCP and registry tokens"},
	{".vault-token", false, "HashiCorp Vault: token"},
	{".config/op", true, "1Password CLI: sessions"},
	{".password-store", true, "pass: the password store"},
	{".local/share/keyrings", true, "GNOME Keyring: keyrings"},
	{".mozilla", true, "Firefox: cookies, saved passwords"},
	{".config/google-chrome", true, "Chrome: cookies, saved passwords"},
	{".config/chromium", true, "Chromium: cookies, saved passwords"},
	{".claude/.credentials.json", false, "Claude Code: OAuth tokens"},
	{".claude.json", false, "Claude Code: its state, with the API key (primaryApiKey) where one was entered"},
	{".codex/auth.json", false, "Codex: OpenAI API key, ChatGPT tokens"},
	{".gemini/oauth_creds.json", false, "Gemini CLI: OAuth tokens"},
	{".gemini/.env", false, "Gemini CLI: API keys"},
	{".aider.conf.yml", false, "aider: API keys"},
	{".config/github-copilot", true, "GitHub Copilot: OAuth tokens"},
	{".cache/huggingface/token", false, "Hugging Face Hub: token"},
	{".huggingface/token", false, "Hugging Face Hub: token (older versions)"},
	{".config/containers/auth.json", false, "Podman, Buildah, Skopeo: registry credentials"},
	{".config/hub", false, "hub: GitHub token"},
	{".config/doctl", true, "DigitalOcean CLI: tokens"},
	{".fly", true, "fly.io CLI: tokens"},
	{".oci", true, "Oracle Cloud CLI: API signing keys"},
	{".s3cfg", false, "s3cmd: access keys"},
	{".boto", false, "gsutil, boto: access keys"},
	{".config/rclone/rclone.conf", false, "rclone: cloud storage credentials"},
	{".pgpass", false, "PostgreSQL: passwords"},
	{".my.cnf", false, "MySQL, MariaDB: passwords"},
	{".composer/auth.json", false, "Composer: repository tokens"},
	{".config/composer/auth.json", false, "Composer: repository tokens (XDG)"},
	{".terraformrc", false, "Terraform: registry tokens"},
	{".minikube", true, "minikube: cluster client keys and CA, which its kubeconfig names"},
	{".config/helm/repositories.yaml", false, "Helm: chart repository passwords"},
}

// CredentialTable returns the credential table, in order.
func CredentialTable() []CredentialEntry { return slices.Clone(credentialTable) }

// credentialRule is the rule name of a denied credential store.
const credentialRule = "a home directory's credentials"

// grantedHomes returns the home directories g's granted directories reach
// (isHomeDir): a granted directory that is one, this user's and /root
// inside a granted directory, and each directory directly in a granted
// directory that is one (which holds those directly in /home when /home
// is granted); and every home directory of the user database
// (passwdHomes) inside a granted directory, at any depth.
func (g *Grant) grantedHomes() []string {
	home := userHome()
	users := passwdHomes()
	var out []string
	for _, r := range g.roots {
		if !r.dir {
			continue
		}
		for _, h := range users {
			if within(h, r.path) {
				out = append(out, h)
			}
		}
		if isHomeDir(r.path, home) {
			out = append(out, r.path)
		}
		for _, c := range []string{home, "/root"} {
			if c != "" && within(c, r.path) {
				out = append(out, c)
			}
		}
		entries, err := os.ReadDir(r.path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if c := filepath.Join(r.path, e.Name()); e.IsDir() && isHomeDir(c, home) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hideCredentials denies each existing entry of credentialTable in every
// home directory g reaches, as paths.deny does, unless a granted path is
// that entry or lies inside it (the user asked for it by name). What a
// symlink entry leads to is denied, where a grant reaches it. It records
// the denied paths in g.credentials.
func (g *Grant) hideCredentials() {
	for _, h := range g.grantedHomes() {
		for _, e := range credentialTable {
			p := filepath.Join(h, filepath.FromSlash(e.Name))
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			r, err := resolve(p)
			if err != nil {
				// Not resolvable here, so not to the sandbox either; hide
				// the name itself where a grant reaches it.
				r = resolved{path: p}
			}
			explicit := slices.ContainsFunc(g.roots, func(x root) bool { return within(x.path, p) || within(x.path, r.path) })
			if explicit {
				continue
			}
			owner, ok := g.rootOf(r.path)
			if !ok || owner.path == r.path || slices.Contains(g.deny, r.path) {
				continue
			}
			if g.credentials == nil {
				g.credentials = map[string]string{}
			}
			g.deny = append(g.deny, r.path)
			g.credentials[r.path] = e.Name
		}
	}
}

// credentialReason says why the credential store d (denied by
// hideCredentials as the table's name) is refused, and how to grant it.
func credentialReason(d, name string) string {
	return fmt.Sprintf("%s is a home directory's credential store (%s), hidden from the sandbox unless granted by name; to give it, grant it explicitly: paths.read_only = [%q] in the grant, or --ro %s", d, name, d, d)
}

// passwdFile is the user database whose home directories grantedHomes
// takes (a variable for tests).
var passwdFile = "/etc/passwd"

// maxPasswd bounds how much of passwdFile is read.
const maxPasswd = 4 << 20

// passwdHomes returns the home directories the user database names,
// resolved, each an existing directory other than "/": a service
// account's (/var/lib/postgresql, /srv/git) keeps its keys and passwords
// at the same names as a person's, wherever it lies, and need not look
// like a home directory (isHomeDir) to hold them.
//
// isHomeDir asks for every directory of every read-write tree, so the
// list is kept while the file's size and modification time stay the same.
func passwdHomes() []string {
	f, err := os.Open(passwdFile)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	key := passwdKey{passwdFile, fi.Size(), fi.ModTime()}
	passwdCache.Lock()
	defer passwdCache.Unlock()
	if passwdCache.key == key {
		return passwdCache.homes
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPasswd))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) < 7 || !filepath.IsAbs(fields[5]) {
			continue
		}
		r, err := resolve(filepath.Clean(fields[5]))
		if err != nil || r.missing > 0 || r.path == "/" {
			continue
		}
		if fi, err := os.Stat(r.path); err == nil && fi.IsDir() {
			out = append(out, r.path)
		}
	}
	slices.Sort(out)
	out = slices.Clip(slices.Compact(out))
	passwdCache.key, passwdCache.homes = key, out
	return out
}

// passwdKey is what passwdHomes's list was read from.
type passwdKey struct {
	file  string
	size  int64
	mtime time.Time
}

// passwdCache is passwdHomes's last list.
var passwdCache struct {
	sync.Mutex
	key   passwdKey
	homes []string
}
