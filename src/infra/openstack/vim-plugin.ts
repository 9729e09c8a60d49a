/**
 * The OpenStack VIM plugin: Keystone v3 credentials of a registration, its connection (Heat's
 * driver reads it), and the driver. Packages with a base HOT for the flavour default to it.
 */
import { vnfmError } from '../../errors.ts';
import { str } from '../../vims/vim-registry.ts';
import type { VimPlugin } from '../vim-plugin.ts';
import { createOpenStackDriver } from './driver.ts';
import { createOpenStackHealthWatcher } from './health-watch.ts';
import { OPENSTACK_VIM_KIND, OPENSTACK_VIM_TYPE, OPENSTACK_VIM_TYPE_ALIASES } from './vim-type.ts';

export const openstackVimPlugin: VimPlugin = {
  kind: OPENSTACK_VIM_KIND,
  vimType: OPENSTACK_VIM_TYPE,
  aliases: OPENSTACK_VIM_TYPE_ALIASES,
  credentialKey: 'password',
  applyRegistration(input, prev, config, secret) {
    const cred = input.auth_cred ?? {};
    const proj = input.vim_project ?? {};
    config.username = str(cred.username) ?? prev?.config.username;
    config.userDomainName = str(cred.user_domain_name) ?? prev?.config.userDomainName ?? 'Default';
    config.projectName = str(proj.name) ?? str(cred.project_name) ?? prev?.config.projectName;
    config.projectDomainName = str(proj.project_domain_name) ?? str(cred.project_domain_name) ?? prev?.config.projectDomainName ?? 'Default';
    config.region = str(cred.region) ?? str(input.extra?.region) ?? prev?.config.region ?? 'RegionOne';
    if (typeof cred.password === 'string') secret.password = cred.password;
    if (!config.username || !secret.password) throw vnfmError('VNFM_ERR_VIM_INVALID', 'an openstack VIM needs auth_cred.username and auth_cred.password');
    if (!config.projectName) throw vnfmError('VNFM_ERR_VIM_INVALID', 'an openstack VIM needs vim_project.name');
  },
  toConnection(v) {
    return {
      vimId: v.id,
      vimType: OPENSTACK_VIM_TYPE,
      interfaceInfo: { endpoint: v.config.authUrl, ...(v.config.certVerify === false ? { skipCertificateVerification: true } : {}), ...(v.config.sslCaCert ? { ssl_ca_cert: v.config.sslCaCert } : {}) },
      accessInfo: {
        username: v.config.username,
        password: v.secret.password,
        project: v.config.projectName,
        projectDomain: v.config.projectDomainName,
        userDomain: v.config.userDomainName,
        region: v.config.region,
      },
      extra: { ...(v.config.heatEnvironment ? { heatEnvironment: v.config.heatEnvironment } : {}), ...(v.config.heatEnvironmentFiles ? { heatEnvironmentFiles: v.config.heatEnvironmentFiles } : {}) },
    };
  },
  toApi(v) {
    return {
      authCred: { username: v.config.username, user_domain_name: v.config.userDomainName, password: '***', cert_verify: v.config.certVerify ?? true, ...(v.config.sslCaCert ? { ssl_ca_cert: '***' } : {}) },
      vimProject: { name: v.config.projectName, project_domain_name: v.config.projectDomainName },
    };
  },
  // Keystone and its catalog's endpoints are checked against the outbound rules of VIMs before every request
  createDriver: (deps) => createOpenStackDriver({ outbound: deps.vimOutbound }),
  syncByDefault: false,
  deploysPackage: (vnfd, flavourId) => Boolean(vnfd.baseHotDirs[flavourId]),
  packageFallback: true,
  // one Nova changes-since listing per VIM project and period (src/infra/openstack/health-watch.ts)
  healthWatcher: (deps) => createOpenStackHealthWatcher(deps),
};
