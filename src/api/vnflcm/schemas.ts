/**
 * Request body schemas of the VNF LCM API (TypeBox -> JSON Schema). They validate types and
 * required attributes; semantic checks (does the VNFC exist, is the state right) are in services.
 */
import { Type } from 'typebox';

const Str = Type.String({ maxLength: 4096 });
const Obj = Type.Object({}, { additionalProperties: true });

/** VimConnectionInfo entry (v2 map value or v1 array element). */
export const VimConnectionInfoSchema = Type.Object(
  {
    id: Type.Optional(Str),
    vimId: Type.Optional(Type.Union([Str, Type.Null()])),
    vimType: Type.Optional(Str),
    interfaceInfo: Type.Optional(Type.Union([Obj, Type.Null()])),
    accessInfo: Type.Optional(Type.Union([Obj, Type.Null()])),
    extra: Type.Optional(Type.Union([Obj, Type.Null()])),
  },
  { additionalProperties: true },
);

/** CreateVnfRequest, v1 and v2. */
export function createVnfRequestSchema(v: 'v1' | 'v2') {
  return Type.Object(
    {
      vnfdId: Type.String({ minLength: 1, maxLength: 255 }),
      vnfInstanceName: Type.Optional(Type.String({ maxLength: 255 })),
      vnfInstanceDescription: Type.Optional(Type.String({ maxLength: 1024 })),
      metadata: Type.Optional(Obj),
      ...(v === 'v2' ? { vimConnectionInfo: Type.Optional(Type.Record(Type.String(), VimConnectionInfoSchema)) } : {}),
    },
    { additionalProperties: true },
  );
}

/** VnfInfoModificationRequest, v1 (array vimConnectionInfo) and v2 (map). */
export function modifyVnfRequestSchema(v: 'v1' | 'v2') {
  return Type.Object(
    {
      vnfInstanceName: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
      vnfInstanceDescription: Type.Optional(Type.Union([Type.String({ maxLength: 1024 }), Type.Null()])),
      vnfdId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      vnfPkgId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      vnfConfigurableProperties: Type.Optional(Type.Union([Obj, Type.Null()])),
      metadata: Type.Optional(Type.Union([Obj, Type.Null()])),
      extensions: Type.Optional(Type.Union([Obj, Type.Null()])),
      vimConnectionInfo: Type.Optional(v === 'v2' ? Type.Record(Type.String(), Type.Union([VimConnectionInfoSchema, Type.Null()])) : Type.Array(VimConnectionInfoSchema)),
      ...(v === 'v1' ? { vimConnectionInfoDeleteIds: Type.Optional(Type.Array(Str)) } : {}),
      vnfcInfoModifications: Type.Optional(Type.Array(Obj)),
    },
    { additionalProperties: true },
  );
}

/** Path parameter `{vnfInstanceId}` etc. */
export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });
