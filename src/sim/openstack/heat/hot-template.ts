/**
 * HOT template model for the simulated Heat: parsing (YAML/JSON text or object), version check,
 * parameter typing/defaults/constraints and the string form Heat shows parameters in. Kept apart
 * from the engine so validation errors surface at `POST /stacks` time with Heat's wording.
 */
import { parse as parseYaml } from 'yaml';

/** A validation failure that a real Heat answers with `400 StackValidationFailed` (or a sibling type). */
export class HeatValidationError extends Error {
  readonly type: string;

  constructor(message: string, type = 'StackValidationFailed') {
    super(message);
    this.type = type;
  }
}

/** One declared template parameter. */
export interface ParamDef {
  readonly type: 'string' | 'number' | 'json' | 'comma_delimited_list' | 'boolean';
  readonly default?: unknown;
  readonly description?: string;
  readonly label?: string;
  readonly hidden: boolean;
  readonly constraints: readonly Record<string, unknown>[];
  readonly immutable: boolean;
}

/** One declared resource. */
export interface ResourceDef {
  readonly type: string;
  readonly properties: unknown;
  readonly metadata: unknown;
  readonly dependsOn: readonly string[];
  readonly condition: unknown;
  readonly deletionPolicy: string | undefined;
  readonly updatePolicy: unknown;
}

/** One declared output. */
export interface OutputDef {
  readonly value: unknown;
  readonly description: string;
  readonly condition: unknown;
}

/** A parsed HOT template. */
export interface HotTemplate {
  readonly version: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, ParamDef>>;
  readonly resources: Readonly<Record<string, ResourceDef>>;
  /** Resource names in declaration order. */
  readonly resourceOrder: readonly string[];
  readonly outputs: Readonly<Record<string, OutputDef>>;
  readonly conditions: Readonly<Record<string, unknown>>;
  /** The template as a JSON object, what `GET .../template` returns. */
  readonly raw: Readonly<Record<string, unknown>>;
}

const HOT_VERSIONS = new Set([
  '2013-05-23',
  '2014-10-16',
  '2015-04-30',
  '2015-10-15',
  '2016-04-08',
  '2016-10-14',
  'newton',
  '2017-02-24',
  'ocata',
  '2017-09-01',
  'pike',
  '2018-03-02',
  'queens',
  '2018-08-31',
  'rocky',
  '2021-04-16',
  'wallaby',
]);

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function versionString(v: unknown): string {
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  return String(v);
}

/** Parses template text (YAML or JSON) or an already parsed object into a plain JSON object. */
export function loadTemplateObject(source: unknown, what = 'template'): Record<string, unknown> {
  let obj: unknown = source;
  if (typeof source === 'string') {
    try {
      obj = parseYaml(source, { schema: 'core', version: '1.2' });
    } catch (e) {
      throw new HeatValidationError(`Error parsing ${what}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  if (!isObj(obj)) throw new HeatValidationError(`The ${what} is not a JSON object or YAML mapping.`);
  // Normalise YAML timestamps (heat_template_version: 2013-05-23 unquoted) and drop undefined.
  return JSON.parse(JSON.stringify(obj, (_k, v: unknown) => (v instanceof Date ? v.toISOString().slice(0, 10) : v))) as Record<
    string,
    unknown
  >;
}

const PARAM_TYPES = new Set(['string', 'number', 'json', 'comma_delimited_list', 'boolean']);
const PARAM_TYPE_ALIASES: Record<string, ParamDef['type']> = {
  String: 'string',
  Number: 'number',
  Json: 'json',
  CommaDelimitedList: 'comma_delimited_list',
  Boolean: 'boolean',
  'List<String>': 'comma_delimited_list',
  list: 'comma_delimited_list',
  map: 'json',
};

/** Parsed templates by source text: group members and repeated stacks reuse the same files. */
const parsedCache = new Map<string, HotTemplate>();
const PARSED_CACHE_MAX = 500;

/** Parses and checks a HOT template; `name` is used in error messages for nested templates. */
export function parseTemplate(source: unknown, name = 'template'): HotTemplate {
  if (typeof source !== 'string') return parseTemplateUncached(source, name);
  const hit = parsedCache.get(source);
  if (hit) return hit;
  const parsed = parseTemplateUncached(source, name);
  if (parsedCache.size >= PARSED_CACHE_MAX) parsedCache.delete(parsedCache.keys().next().value as string);
  parsedCache.set(source, parsed);
  return parsed;
}

function parseTemplateUncached(source: unknown, name: string): HotTemplate {
  const raw = loadTemplateObject(source, name);
  if ('AWSTemplateFormatVersion' in raw || 'HeatTemplateFormatVersion' in raw) {
    throw new HeatValidationError('CFN templates are not supported by the simulated Heat; use HOT.', 'InvalidTemplateVersion');
  }
  const versionRaw = raw.heat_template_version;
  if (versionRaw === undefined) {
    throw new HeatValidationError('Template format version not found.', 'InvalidTemplateVersion');
  }
  const version = versionString(versionRaw);
  if (!HOT_VERSIONS.has(version)) {
    throw new HeatValidationError(
      `The template version is invalid: "heat_template_version: ${version}". "heat_template_version" should be one of: ${[...HOT_VERSIONS].join(', ')}`,
      'InvalidTemplateVersion',
    );
  }
  const known = new Set([
    'heat_template_version',
    'description',
    'parameter_groups',
    'parameters',
    'resources',
    'outputs',
    'conditions',
  ]);
  for (const k of Object.keys(raw)) {
    if (!known.has(k)) throw new HeatValidationError(`Unknown top-level key "${k}" in template.`, 'StackValidationFailed');
  }
  const parameters: Record<string, ParamDef> = {};
  const rawParams = raw.parameters ?? {};
  if (!isObj(rawParams)) throw new HeatValidationError('The template section "parameters" must be a map.');
  for (const [pname, pdef] of Object.entries(rawParams)) {
    if (!isObj(pdef)) throw new HeatValidationError(`Parameter ${pname} must be a map.`);
    const t = String(pdef.type ?? '');
    const type = (PARAM_TYPES.has(t) ? t : PARAM_TYPE_ALIASES[t]) as ParamDef['type'] | undefined;
    if (!type) throw new HeatValidationError(`Invalid type (${t}) of parameter ${pname}.`);
    const constraints = Array.isArray(pdef.constraints) ? pdef.constraints.filter(isObj) : [];
    parameters[pname] = {
      type,
      default: pdef.default,
      description: typeof pdef.description === 'string' ? pdef.description : undefined,
      label: typeof pdef.label === 'string' ? pdef.label : undefined,
      hidden: pdef.hidden === true || pdef.hidden === 'true',
      constraints,
      immutable: pdef.immutable === true,
    };
  }
  const rawResources = raw.resources ?? {};
  if (!isObj(rawResources)) throw new HeatValidationError('The template section "resources" must be a map.');
  const resources: Record<string, ResourceDef> = {};
  for (const [rname, rdef] of Object.entries(rawResources)) {
    if (!isObj(rdef)) throw new HeatValidationError(`Resource ${rname} must be a map.`);
    if (typeof rdef.type !== 'string' || rdef.type === '') {
      throw new HeatValidationError(`Resource ${rname} is missing "type".`);
    }
    const allowed = new Set([
      'type',
      'properties',
      'metadata',
      'depends_on',
      'condition',
      'deletion_policy',
      'update_policy',
      'external_id',
    ]);
    for (const k of Object.keys(rdef)) {
      if (!allowed.has(k)) throw new HeatValidationError(`"${k}" is not a valid keyword inside a resource definition`);
    }
    const dep = rdef.depends_on;
    const dependsOn = dep === undefined || dep === null ? [] : Array.isArray(dep) ? dep.map(String) : [String(dep)];
    if (rdef.properties !== undefined && rdef.properties !== null && !isObj(rdef.properties)) {
      throw new HeatValidationError(`Properties of resource ${rname} must be a map.`);
    }
    resources[rname] = {
      type: rdef.type,
      properties: rdef.properties ?? {},
      metadata: rdef.metadata ?? {},
      dependsOn,
      condition: rdef.condition,
      deletionPolicy: typeof rdef.deletion_policy === 'string' ? rdef.deletion_policy : undefined,
      updatePolicy: rdef.update_policy,
    };
  }
  const rawOutputs = raw.outputs ?? {};
  const outputs: Record<string, OutputDef> = {};
  if (isObj(rawOutputs)) {
    for (const [oname, odef] of Object.entries(rawOutputs)) {
      const o = isObj(odef) ? odef : { value: odef };
      outputs[oname] = {
        value: o.value,
        description: typeof o.description === 'string' ? o.description : 'No description given',
        condition: o.condition,
      };
    }
  }
  const conditions = isObj(raw.conditions) ? raw.conditions : {};
  return {
    version,
    description: typeof raw.description === 'string' ? raw.description : 'No description',
    parameters,
    resources,
    resourceOrder: Object.keys(resources),
    outputs,
    conditions,
    raw,
  };
}

const TRUE_STRINGS = new Set(['true', 't', 'on', 'y', 'yes', '1']);
const FALSE_STRINGS = new Set(['false', 'f', 'off', 'n', 'no', '0']);

/** Converts a supplied value to a parameter's type, as Heat does when it parses parameters. */
export function coerceParam(name: string, def: ParamDef, value: unknown): unknown {
  const bad = (why: string): HeatValidationError =>
    new HeatValidationError(`Parameter '${name}' is invalid: ${why}`, 'StackValidationFailed');
  switch (def.type) {
    case 'string':
      if (value === null || value === undefined) return '';
      if (typeof value === 'object') throw bad(`Value must be a string; got ${JSON.stringify(value)}`);
      return String(value);
    case 'number': {
      if (typeof value === 'number') return value;
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
      if (Number.isNaN(n)) throw bad(`Value '${String(value)}' is not an integer or a float`);
      return n;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'number') return value !== 0;
      if (typeof value === 'string') {
        const v = value.trim().toLowerCase();
        if (TRUE_STRINGS.has(v)) return true;
        if (FALSE_STRINGS.has(v)) return false;
      }
      throw bad(`Unrecognized value "${String(value)}", acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'`);
    case 'json':
      if (typeof value === 'string') {
        if (value.trim() === '') return {};
        try {
          const v = JSON.parse(value) as unknown;
          if (v === null || typeof v !== 'object') throw new Error('not a map or list');
          return v;
        } catch (e) {
          throw bad(`Value must be valid JSON: ${(e as Error).message}`);
        }
      }
      if (value === null || typeof value !== 'object') throw bad('Value must be valid JSON');
      return value;
    case 'comma_delimited_list':
      if (Array.isArray(value)) return value.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
      if (value === null || value === undefined) return [];
      if (typeof value === 'string') return value === '' ? [] : value.split(',').map((x) => x.trim());
      return [String(value)];
  }
}

function checkConstraints(name: string, def: ParamDef, value: unknown): void {
  for (const c of def.constraints) {
    const desc = typeof c.description === 'string' ? c.description : undefined;
    const fail = (why: string): never => {
      throw new HeatValidationError(`Parameter '${name}' is invalid: ${desc ?? why}`);
    };
    if (Array.isArray(c.allowed_values)) {
      const allowed = c.allowed_values.map((x) => String(x));
      const values = Array.isArray(value) ? value.map(String) : [String(value)];
      for (const v of values) if (!allowed.includes(v)) fail(`"${v}" is not an allowed value [${allowed.join(', ')}]`);
    }
    if (isObj(c.range) && typeof value === 'number') {
      const min = c.range.min;
      const max = c.range.max;
      if (typeof min === 'number' && value < min) fail(`${value} is out of range (min: ${min}, max: ${String(max)})`);
      if (typeof max === 'number' && value > max) fail(`${value} is out of range (min: ${String(min)}, max: ${max})`);
    }
    if (isObj(c.length)) {
      const len = typeof value === 'string' || Array.isArray(value) ? value.length : undefined;
      if (len !== undefined) {
        const min = c.length.min;
        const max = c.length.max;
        if (typeof min === 'number' && len < min) fail(`length (${len}) is out of range (min: ${min}, max: ${String(max)})`);
        if (typeof max === 'number' && len > max) fail(`length (${len}) is out of range (min: ${String(min)}, max: ${max})`);
      }
    }
    if (typeof c.allowed_pattern === 'string' && typeof value === 'string') {
      if (!new RegExp(`^(?:${c.allowed_pattern})$`).test(value)) fail(`"${value}" does not match pattern "${c.allowed_pattern}"`);
    }
  }
}

/**
 * Resolves every declared parameter from user values, then environment values, then defaults;
 * unknown user parameters and missing required ones are errors, as in Heat.
 */
export function resolveParameters(
  tmpl: HotTemplate,
  userParams: Readonly<Record<string, unknown>>,
  envParams: Readonly<Record<string, unknown>> = {},
  envDefaults: Readonly<Record<string, unknown>> = {},
  strictUnknown = true,
): Record<string, unknown> {
  if (strictUnknown) {
    for (const k of Object.keys(userParams)) {
      if (!(k in tmpl.parameters)) {
        throw new HeatValidationError(`The Parameter (${k}) was not defined in template.`, 'UnknownUserParameter');
      }
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(tmpl.parameters)) {
    let value: unknown;
    if (name in userParams) value = userParams[name];
    else if (name in envParams) value = envParams[name];
    else if (name in envDefaults) value = envDefaults[name];
    else if (def.default !== undefined && def.default !== null) value = def.default;
    else throw new HeatValidationError(`The Parameter (${name}) was not provided.`, 'UserParameterMissing');
    const coerced = coerceParam(name, def, value);
    checkConstraints(name, def, coerced);
    out[name] = coerced;
  }
  return out;
}

/** `json.dumps` as Python writes it (`", "` and `": "` separators), the form Heat shows json values in. */
export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(pyJson).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(String(value));
}

/** The string Heat shows for a parameter value in `GET /stacks/{name}/{id}` (`parameters`). */
export function displayParam(def: ParamDef | undefined, value: unknown): string {
  if (def?.hidden) return '******';
  if (def?.type === 'json') return pyJson(value);
  if (def?.type === 'comma_delimited_list' && Array.isArray(value)) return value.join(',');
  if (def?.type === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return pyJson(value);
  return String(value);
}
