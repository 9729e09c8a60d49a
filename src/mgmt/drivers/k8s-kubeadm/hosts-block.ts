/**
 * The cluster's names in every node's `/etc/hosts`, as one marked block rewritten whole (spec
 * §2.0.3), instead of Tacker's appended lines and `sed '/<ip>/d'` removals (an unescaped regex:
 * removing 10.0.0.5 also removed 10.0.0.50-59). The file is written in place by the caller
 * (`cat > /etc/hosts`): a bind-mounted file cannot be replaced by a rename.
 */

export const HOSTS_BEGIN = '# BEGIN healvnfm k8s';
export const HOSTS_END = '# END healvnfm k8s';

/** One line of the block. */
export interface HostsEntry {
  ip: string;
  name: string;
}

/** The block for these entries (sorted by name, one line each, newline-terminated). */
export function renderHostsBlock(entries: readonly HostsEntry[]): string {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const e of [...entries].sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }))) {
    const key = `${e.ip} ${e.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    lines.push(`${e.ip} ${e.name}`);
  }
  return `${HOSTS_BEGIN}\n${lines.join('\n')}${lines.length ? '\n' : ''}${HOSTS_END}\n`;
}

/** The entries of the block present in a hosts file (empty when there is none). */
export function parseHostsBlock(text: string): HostsEntry[] {
  const lines = text.split('\n');
  const b = lines.indexOf(HOSTS_BEGIN);
  if (b < 0) return [];
  const out: HostsEntry[] = [];
  for (let i = b + 1; i < lines.length && lines[i] !== HOSTS_END; i++) {
    const f = (lines[i] ?? '').trim().split(/\s+/);
    if (f.length >= 2 && f[0] && f[1]) out.push({ ip: f[0], name: f[1] });
  }
  return out;
}

/**
 * The hosts file with the block replaced by one for `entries` (appended when absent). Every other
 * line is kept, except lines outside the block that map one of `dropNames` (exact hostname tokens:
 * Tacker-era lines of nodes that left the cluster).
 */
export function applyHostsBlock(text: string, entries: readonly HostsEntry[], dropNames: readonly string[] = []): string {
  const drop = new Set(dropNames);
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const kept: string[] = [];
  let inBlock = false;
  let at = -1;
  lines.forEach((l, i) => {
    if (l === HOSTS_BEGIN) {
      // a BEGIN without its END (a hand edit) drops only the marker line
      inBlock = lines.indexOf(HOSTS_END, i + 1) > i;
      if (at < 0) at = kept.length;
      return;
    }
    if (inBlock) {
      if (l === HOSTS_END) inBlock = false;
      return;
    }
    if (l === HOSTS_END) return;
    const body = l.replace(/#.*/, '').trim();
    if (body !== '' && drop.size > 0) {
      const names = body.split(/\s+/).slice(1);
      if (names.some((n) => drop.has(n))) return;
    }
    kept.push(l);
  });
  const block = renderHostsBlock(entries).replace(/\n$/, '').split('\n');
  if (at < 0) at = kept.length;
  return `${[...kept.slice(0, at), ...block, ...kept.slice(at)].join('\n')}\n`;
}
