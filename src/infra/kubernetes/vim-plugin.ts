/**
 * The Kubernetes VIM plugin: a registration's bearer token and namespace, its connection, and the
 * driver. Packages with Kubernetes manifests (and no base HOT for the flavour) default to it; the
 * background drift sync visits its instances by default (Kubernetes replaces pods by itself).
 */
import { vnfmError } from '../../errors.ts';
import { str } from '../../vims/vim-registry.ts';
import type { VimPlugin } from '../vim-plugin.ts';
import { createKubernetesDriver } from './driver.ts';
import { createKubernetesHealthWatcher } from './health-watch.ts';
import { KUBERNETES_VIM_KIND, KUBERNETES_VIM_TYPE } from './vim-type.ts';

export const kubernetesVimPlugin: VimPlugin = {
  kind: KUBERNETES_VIM_KIND,
  vimType: KUBERNETES_VIM_TYPE,
  aliases: [],
  credentialKey: 'bearer_token',
  applyRegistration(input, prev, config, secret) {
    const cred = input.auth_cred ?? {};
    if (typeof cred.bearer_token === 'string') secret.bearerToken = cred.bearer_token;
    if (!secret.bearerToken) throw vnfmError('VNFM_ERR_VIM_INVALID', 'a kubernetes VIM needs auth_cred.bearer_token');
    config.projectName = str(input.vim_project?.name) ?? prev?.config.projectName ?? 'default';
  },
  toConnection(v) {
    return {
      vimId: v.id,
      vimType: KUBERNETES_VIM_TYPE,
      interfaceInfo: { endpoint: v.config.authUrl, ...(v.config.sslCaCert ? { ssl_ca_cert: v.config.sslCaCert } : {}), ...(v.config.certVerify === false ? { skipCertificateVerification: true } : {}) },
      accessInfo: { bearer_token: v.secret.bearerToken },
      extra: {},
    };
  },
  toApi(v) {
    return { authCred: { bearer_token: '***', ...(v.config.sslCaCert ? { ssl_ca_cert: '***' } : {}) }, vimProject: { name: v.config.projectName } };
  },
  // API server endpoints are checked against the outbound rules of VIMs before every request
  createDriver: (deps) => createKubernetesDriver({ client: { outbound: deps.vimOutbound } }),
  // pods (and the nodes of cluster VNFs) watched per cluster connection, every request through the same rules
  healthWatcher: (deps) => createKubernetesHealthWatcher(deps),
  syncByDefault: true,
  deploysPackage: (vnfd) => vnfd.kubernetesFiles.length > 0,
};
