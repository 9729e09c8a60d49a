/**
 * Floating IPs of the lab (Neutron's NAT, as its L3 agent does it): a floating IP bound to a port
 * on the lab network reaches the host of that port's fixed IP. In the root namespace, one nftables
 * table of the lab's own (`ip hvlab_fip`) holds a map floating -> fixed address:
 *
 * - `output` (the VNFM and anything else on the machine) and `prerouting` (the hosts, through the
 *   bridge: an Ansible server reaching a node by its floating IP) DNAT the floating address to the
 *   fixed one, so the host sees a connection to its own address, as a VM behind a floating IP does;
 * - `postrouting` masquerades such a connection from one host to another (hairpin), so the reply
 *   comes back through the NAT;
 * - a route `<floating>/32 dev hvlab0 src <bridge> proto static` per floating IP makes the first routing decision
 *   pick the bridge; forwarding is enabled on the bridge only (`net.ipv4.conf.hvlab0.forwarding`),
 *   and, unless the machine routes anyway (`ip_forward` 1), only back into the bridge (a `forward`
 *   chain drops the rest), so the hosts still reach nothing beyond the lab.
 *
 * The mapping follows the port, not the server: a heal that rebinds the port to a new server
 * reaches the new host; a floating IP deleted or unbound is removed from the map (new connections
 * are not answered). The table goes when the lab stops and is rebuilt from the cloud at start.
 * Needs `nft` (Debian package nftables); without it the lab warns once and floating IPs do not
 * answer.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { LabLogger } from './hosts.ts';
import { run } from './sh.ts';

/** The lab's nftables table (family ip). */
export const FIP_TABLE = 'hvlab_fip';
const NFT = '/usr/sbin/nft';

const silent: LabLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** Options of {@link FloatingNat}. */
export interface FloatingNatOptions {
  bridge: string;
  bridgeIp: string;
  /** The lab subnet (hairpin connections from it are masqueraded). */
  cidr: string;
  logger?: LabLogger;
}

/** The NAT of the lab's floating IPs. */
export class FloatingNat {
  private readonly map = new Map<string, string>();
  private ready = false;
  private readonly log: LabLogger;

  constructor(private readonly o: FloatingNatOptions) {
    this.log = o.logger ?? silent;
  }

  /** Whether the machine has `nft`. */
  static available(): boolean {
    return existsSync(NFT);
  }

  /** Floating -> fixed address, as applied. */
  mappings(): Map<string, string> {
    return new Map(this.map);
  }

  /** (Re)creates the empty table, its chains and map; enables forwarding on the bridge. */
  async start(): Promise<void> {
    await run(NFT, ['delete', 'table', 'ip', FIP_TABLE], { allowFail: true });
    const { bridge, cidr } = this.o;
    // Forwarding is turned on for the bridge only, for the hairpin; when the machine does not
    // route otherwise, the hosts still reach nothing beyond the bridge (as before).
    const routes = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim() === '1';
    const ruleset = [
      `table ip ${FIP_TABLE} {`,
      '  map fips { type ipv4_addr : ipv4_addr; }',
      '  chain prerouting { type nat hook prerouting priority dstnat; policy accept; dnat to ip daddr map @fips; }',
      '  chain output { type nat hook output priority -100; policy accept; dnat to ip daddr map @fips; }',
      `  chain postrouting { type nat hook postrouting priority srcnat; policy accept; ct status dnat ip saddr ${cidr} oifname "${bridge}" masquerade; }`,
      ...(routes ? [] : [`  chain forward { type filter hook forward priority filter; policy accept; iifname "${bridge}" oifname != "${bridge}" drop; }`]),
      '}',
      '',
    ].join('\n');
    await run(NFT, ['-f', '-'], { input: ruleset });
    await run('ip', ['route', 'flush', 'dev', bridge, 'proto', 'static'], { allowFail: true });
    writeFileSync(`/proc/sys/net/ipv4/conf/${bridge}/forwarding`, '1');
    this.map.clear();
    this.ready = true;
  }

  /** Brings the NAT to `want` (floating -> fixed). */
  async apply(want: ReadonlyMap<string, string>): Promise<void> {
    if (!this.ready) return;
    for (const [f, x] of [...this.map]) {
      if (want.get(f) === x) continue;
      await run(NFT, ['delete', 'element', 'ip', FIP_TABLE, 'fips', `{ ${f} }`], { allowFail: true });
      if (!want.has(f)) await run('ip', ['route', 'del', `${f}/32`, 'dev', this.o.bridge, 'proto', 'static'], { allowFail: true });
      this.map.delete(f);
      this.log.info({ floatingIp: f, fixedIp: x }, 'lab: floating IP unmapped');
    }
    for (const [f, x] of want) {
      if (this.map.get(f) === x) continue;
      await run(NFT, ['add', 'element', 'ip', FIP_TABLE, 'fips', `{ ${f} : ${x} }`]);
      await run('ip', ['route', 'replace', `${f}/32`, 'dev', this.o.bridge, 'src', this.o.bridgeIp, 'proto', 'static']);
      this.map.set(f, x);
      this.log.info({ floatingIp: f, fixedIp: x }, 'lab: floating IP mapped to its port\'s host');
    }
  }

  /** Removes the table (the routes go with the bridge). */
  async stop(): Promise<void> {
    this.ready = false;
    this.map.clear();
    await run(NFT, ['delete', 'table', 'ip', FIP_TABLE], { allowFail: true });
  }
}
