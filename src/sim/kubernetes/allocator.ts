/**
 * Allocation of Service cluster IPs (10.96.0.0/16), NodePorts (30000-32767) and LoadBalancer
 * ingress IPs, with release on delete, so Services get the same kind of addresses as on a real
 * cluster and explicit conflicts are rejected.
 */

/** Saved state of the {@link ServiceAllocator}. */
export interface AllocatorSnapshot {
  clusterIps: string[];
  nodePorts: number[];
  lbIps: string[];
  nextIp: number;
  nextPort: number;
  nextLb: number;
}

/** Hands out and tracks service addresses and ports. */
export class ServiceAllocator {
  private readonly clusterIps = new Set<string>();
  private readonly nodePorts = new Set<number>();
  private readonly lbIps = new Set<string>();
  private nextIp = 10;
  private nextPort = 30000;
  private nextLb = 1;

  /** The state to save (JSON-serialisable; restored by {@link restore}). */
  snapshot(): AllocatorSnapshot {
    return { clusterIps: [...this.clusterIps], nodePorts: [...this.nodePorts], lbIps: [...this.lbIps], nextIp: this.nextIp, nextPort: this.nextPort, nextLb: this.nextLb };
  }

  /** Replaces the state with a saved one. */
  restore(s: AllocatorSnapshot): void {
    this.clusterIps.clear();
    for (const x of s.clusterIps) this.clusterIps.add(x);
    this.nodePorts.clear();
    for (const x of s.nodePorts) this.nodePorts.add(x);
    this.lbIps.clear();
    for (const x of s.lbIps) this.lbIps.add(x);
    this.nextIp = s.nextIp;
    this.nextPort = s.nextPort;
    this.nextLb = s.nextLb;
  }

  /** Reserves an explicit cluster IP; false when taken. */
  reserveClusterIp(ip: string): boolean {
    if (this.clusterIps.has(ip)) return false;
    this.clusterIps.add(ip);
    return true;
  }

  /** Allocates the next free cluster IP. */
  allocateClusterIp(): string {
    for (let i = 0; i < 65000; i++) {
      const n = this.nextIp;
      this.nextIp = this.nextIp >= 65000 ? 10 : this.nextIp + 1;
      const ip = `10.96.${n >> 8}.${n & 255}`;
      if ((n & 255) !== 0 && (n & 255) !== 255 && !this.clusterIps.has(ip)) {
        this.clusterIps.add(ip);
        return ip;
      }
    }
    throw new Error('cluster IP range exhausted');
  }

  /** Frees a cluster IP. */
  releaseClusterIp(ip: string | undefined): void {
    if (ip) this.clusterIps.delete(ip);
  }

  /** Whether a node port is free. */
  nodePortFree(port: number): boolean {
    return !this.nodePorts.has(port);
  }

  /** Reserves an explicit node port; false when taken. */
  reserveNodePort(port: number): boolean {
    if (this.nodePorts.has(port)) return false;
    this.nodePorts.add(port);
    return true;
  }

  /** Allocates a free node port in 30000-32767. */
  allocateNodePort(): number {
    for (let i = 0; i < 2768; i++) {
      const p = this.nextPort;
      this.nextPort = this.nextPort >= 32767 ? 30000 : this.nextPort + 1;
      if (!this.nodePorts.has(p)) {
        this.nodePorts.add(p);
        return p;
      }
    }
    throw new Error('node port range exhausted');
  }

  /** Frees a node port. */
  releaseNodePort(port: number | undefined): void {
    if (port) this.nodePorts.delete(port);
  }

  /** Allocates a LoadBalancer ingress IP (172.18.255.x). */
  allocateLbIp(): string {
    for (let i = 0; i < 254; i++) {
      const n = this.nextLb;
      this.nextLb = this.nextLb >= 254 ? 1 : this.nextLb + 1;
      const ip = `172.18.255.${n}`;
      if (!this.lbIps.has(ip)) {
        this.lbIps.add(ip);
        return ip;
      }
    }
    return '172.18.255.254';
  }

  /** Frees a LoadBalancer IP. */
  releaseLbIp(ip: string | undefined): void {
    if (ip) this.lbIps.delete(ip);
  }
}
