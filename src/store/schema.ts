/**
 * Row types of every table, for Kysely. Large nested SOL structures are jsonb columns (as Tacker
 * does), addressed by id inside the engine; relational columns are only what we query or index on.
 */
import type { ColumnType, Generated } from 'kysely';

/** jsonb column: written as a JSON string, read back parsed. */
export type Json<T> = ColumnType<T, string, string>;
type Ts = ColumnType<Date, Date | string, Date | string>;
/** Timestamp with a database default. */
type CreatedTs = ColumnType<Date, Date | string | undefined, Date | string>;

export interface VnfPackageTable {
  id: string;
  onboarding_state: string;
  operational_state: string;
  usage_state: string;
  vnfd_id: string | null;
  vnf_provider: string | null;
  vnf_product_name: string | null;
  vnf_software_version: string | null;
  vnfd_version: string | null;
  checksum: Json<{ algorithm: string; hash: string } | null>;
  user_defined_data: Json<Record<string, unknown>>;
  vnfd: Json<unknown | null>;
  onboarding_error: string | null;
  content: Uint8Array | null;
  created_at: CreatedTs;
  /** The owning project; null: shared by every project. */
  project: Generated<string | null>;
}

export interface VimTable {
  id: string;
  name: string;
  type: string;
  description: string;
  is_default: boolean;
  config: Json<Record<string, unknown>>;
  secret: string;
  status: string;
  created_at: CreatedTs;
  updated_at: CreatedTs;
  /** The owning project; null: shared by every project. */
  project: Generated<string | null>;
}

export interface VnfInstanceTable {
  id: string;
  vnf_instance_name: string | null;
  vnf_instance_description: string | null;
  vnfd_id: string;
  vnf_pkg_id: string;
  vnf_provider: string;
  vnf_product_name: string;
  vnf_software_version: string;
  vnfd_version: string;
  instantiation_state: string;
  vnf_configurable_properties: Json<Record<string, unknown> | null>;
  vim_connection_info: Json<Record<string, unknown>>;
  vim_secrets: string | null;
  instantiated_vnf_info: Json<Record<string, unknown> | null>;
  metadata: Json<Record<string, unknown> | null>;
  extensions: Json<Record<string, unknown> | null>;
  created_api: string;
  created_at: CreatedTs;
  rev: number;
  /** Project (tenant) of the resource; null: none (admins only). */
  project: Generated<string | null>;
}

export interface OpOccTable {
  id: string;
  vnf_instance_id: string;
  operation: string;
  operation_state: string;
  state_entered_time: Ts;
  start_time: Ts;
  is_automatic_invocation: boolean;
  is_cancel_pending: boolean;
  cancel_mode: string | null;
  operation_params: Json<Record<string, unknown>>;
  error: Json<Record<string, unknown> | null>;
  resource_changes: Json<Record<string, unknown> | null>;
  changed_info: Json<Record<string, unknown> | null>;
  grant_id: string | null;
  grant_request: Json<Record<string, unknown> | null>;
  grant: Json<Record<string, unknown> | null>;
  /** Engine checkpoint data: completed steps and their outputs. */
  ctx: Json<Record<string, unknown>>;
  /** What the runner must do next: 'run' | 'retry' | 'rollback' | null (nothing). */
  pending: string | null;
  lease_owner: string | null;
  lease_until: Ts | null;
  attempts: number;
  api_version: string;
  created_at: CreatedTs;
  /** Project (tenant) of the resource; null: none (admins only). */
  project: Generated<string | null>;
}

export interface SubscriptionTable {
  id: string;
  api_version: string;
  callback_uri: string;
  filter: Json<Record<string, unknown> | null>;
  verbosity: string;
  auth_types: Json<string[]>;
  auth_secret: string | null;
  dedupe_key: string;
  created_at: CreatedTs;
  /** Project (tenant) of the resource; null: none (admins only). */
  project: Generated<string | null>;
}

export interface OutboxTable {
  id: Generated<number>;
  subscription_id: string;
  notification: Json<Record<string, unknown>>;
  status: string;
  attempts: number;
  next_attempt_at: Ts;
  last_error: string | null;
  created_at: CreatedTs;
  delivered_at: Ts | null;
}

export interface MgmtStateTable {
  instance_id: string;
  driver: string;
  sealed: string;
  updated_at: Generated<Date>;
}

export interface MgmtLockTable {
  key: string;
  op_occ_id: string;
  acquired_at: Generated<Date>;
}

export interface ServerNotifierTable {
  id: string;
  name: string;
  uri: string;
  vim_id: string;
  send_token: boolean;
  description: string;
  created_at: CreatedTs;
}

export interface KvTable {
  key: string;
  value: Json<unknown>;
}

export interface OauthClientTable {
  id: string;
  name: string;
  secret_hash: string;
  project: string | null;
  role: string;
  certificate_bound: Generated<boolean>;
  created_at: CreatedTs;
}

export interface OauthTokenTable {
  token_hash: string;
  client_id: string;
  role: string;
  scope: string;
  cnf_x5t: string | null;
  expires_at: Ts;
  created_at: CreatedTs;
}

/** The whole database, for `Kysely<Database>`. */
export interface Database {
  vnf_package: VnfPackageTable;
  vim: VimTable;
  vnf_instance: VnfInstanceTable;
  op_occ: OpOccTable;
  subscription: SubscriptionTable;
  outbox: OutboxTable;
  kv: KvTable;
  mgmt_state: MgmtStateTable;
  mgmt_lock: MgmtLockTable;
  server_notifier: ServerNotifierTable;
  oauth_client: OauthClientTable;
  oauth_token: OauthTokenTable;
  auth_revocation: AuthRevocationTable;
}

/** One row (id 1): grows when an OAuth 2.0 client is deleted, so every process drops its cached tokens. */
export interface AuthRevocationTable {
  id: number;
  generation: ColumnType<string | number, number | undefined, number | string>;
}
