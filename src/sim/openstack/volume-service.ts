/**
 * In-memory Cinder model (volumes, volume types, attachments) behind the simulated Heat resources,
 * so that a VNF with storage gets volume ids, `volumes_attached` on its servers and volumes that
 * disappear with the stack, as on a real cloud.
 */
import { isoSeconds, uuid } from './ids.ts';

/** A Cinder volume. */
export interface SimVolume {
  readonly id: string;
  name: string;
  size: number;
  status: 'available' | 'in-use' | 'error';
  readonly imageRef: string | null;
  volumeType: string;
  metadata: Record<string, unknown>;
  readonly availabilityZone: string;
  readonly projectId: string;
  readonly createdAt: string;
  readonly attachments: { server_id: string; attachment_id: string; device: string; volume_id: string }[];
  multiattach: boolean;
}

/** A Cinder volume type. */
export interface SimVolumeType {
  readonly id: string;
  readonly name: string;
  readonly metadata: Record<string, unknown>;
  readonly isPublic: boolean;
  readonly description: string;
}

/** Saved state of the simulated Cinder (see {@link VolumeService.snapshot}). */
export interface VolumeSnapshot {
  volumes: SimVolume[];
  types: SimVolumeType[];
}

/** Cinder state of the simulated cloud. */
export class VolumeService {
  readonly volumes = new Map<string, SimVolume>();
  readonly types = new Map<string, SimVolumeType>();

  constructor() {
    this.createType({ name: '__DEFAULT__' });
  }

  /** The state to save (JSON-serialisable; restored by {@link restore}). */
  snapshot(): VolumeSnapshot {
    return { volumes: [...this.volumes.values()], types: [...this.types.values()] };
  }

  /** Replaces the whole state with a saved one (at start, before any request). */
  restore(s: VolumeSnapshot): void {
    this.volumes.clear();
    for (const v of s.volumes) this.volumes.set(v.id, v);
    this.types.clear();
    for (const t of s.types) this.types.set(t.id, t);
  }

  createType(p: { name?: string; metadata?: Record<string, unknown>; isPublic?: boolean; description?: string }): SimVolumeType {
    const t: SimVolumeType = {
      id: uuid(),
      name: p.name ?? `type-${this.types.size}`,
      metadata: p.metadata ?? {},
      isPublic: p.isPublic ?? true,
      description: p.description ?? '',
    };
    this.types.set(t.id, t);
    return t;
  }

  /** Finds a type by id or name. */
  findType(ref: string): SimVolumeType | undefined {
    return this.types.get(ref) ?? [...this.types.values()].find((t) => t.name === ref);
  }

  createVolume(p: {
    name?: string;
    size?: number;
    imageRef?: string | null;
    volumeType?: string;
    metadata?: Record<string, unknown>;
    availabilityZone?: string;
    projectId: string;
    multiattach?: boolean;
  }): SimVolume {
    const v: SimVolume = {
      id: uuid(),
      name: p.name ?? '',
      size: p.size ?? 1,
      status: 'available',
      imageRef: p.imageRef ?? null,
      volumeType: p.volumeType ?? '__DEFAULT__',
      metadata: p.metadata ?? {},
      availabilityZone: p.availabilityZone ?? 'nova',
      projectId: p.projectId,
      createdAt: isoSeconds(),
      attachments: [],
      multiattach: p.multiattach ?? false,
    };
    this.volumes.set(v.id, v);
    return v;
  }

  /** Attaches a volume to a server (status `in-use`); returns the attachment id. */
  attach(volumeId: string, serverId: string, device = ''): string | undefined {
    const v = this.volumes.get(volumeId);
    if (!v) return undefined;
    const attachmentId = uuid();
    v.attachments.push({ server_id: serverId, attachment_id: attachmentId, device, volume_id: v.id });
    v.status = 'in-use';
    return attachmentId;
  }

  /** Detaches a volume from a server (or every server when `serverId` is omitted). */
  detach(volumeId: string, serverId?: string): void {
    const v = this.volumes.get(volumeId);
    if (!v) return;
    for (let i = v.attachments.length - 1; i >= 0; i--) {
      if (serverId === undefined || v.attachments[i]?.server_id === serverId) v.attachments.splice(i, 1);
    }
    if (v.attachments.length === 0 && v.status === 'in-use') v.status = 'available';
  }

  deleteVolume(id: string): void {
    this.volumes.delete(id);
  }

  /** A Cinder-like document of a volume (for `show` attributes). */
  volumeDoc(v: SimVolume): Record<string, unknown> {
    return {
      id: v.id,
      name: v.name,
      size: v.size,
      status: v.status,
      bootable: v.imageRef ? 'true' : 'false',
      volume_type: v.volumeType,
      metadata: v.metadata,
      availability_zone: v.availabilityZone,
      attachments: v.attachments.map((a) => ({ ...a })),
      created_at: v.createdAt,
      multiattach: v.multiattach,
      'os-vol-tenant-attr:tenant_id': v.projectId,
      volume_image_metadata: v.imageRef ? { image_id: v.imageRef } : undefined,
    };
  }
}
