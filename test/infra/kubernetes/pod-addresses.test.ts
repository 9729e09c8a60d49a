/**
 * Addresses of CNF VNFCs: pod IPs on the pod's primary CP, and the CNF's Services as external CPs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ObservedVnfc } from '../../../src/infra/infra-driver.ts';
import type { KubeObject } from '../../../src/infra/kubernetes/kube-client.ts';
import { podCps, serviceExtCps } from '../../../src/infra/kubernetes/observe.ts';
import type { VduCpModel, VduModel } from '../../../src/packages/vnfd-model.ts';

const vdu = (cpIds: string[]): VduModel => ({ vduId: 'VDU1', name: 'web', description: '', minInstances: 1, maxInstances: 1, initialDelta: 1, virtualStorageIds: [], cpIds, nodeType: 'tosca.nodes.nfv.Vdu.Compute' });
const pod = (name: string, status: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, status }) as KubeObject;
const vnfc = (name: string): ObservedVnfc => ({ vduId: 'VDU1', computeResource: { resourceId: name, vimLevelResourceType: 'Deployment' } });

describe('Kubernetes CP addresses', () => {
  test('pod IPs (status.podIPs, dual stack) go on the primary CP; no declared CP gives <vduId>_pod', () => {
    const p = pod('web-1', { podIP: '10.244.1.5', podIPs: [{ ip: '10.244.1.5' }, { ip: 'fd00::5' }] });
    assert.deepEqual(podCps(vdu([]), 'VDU1', {}, p), [{ cpdId: 'VDU1_pod', addresses: [{ address: '10.244.1.5' }, { address: 'fd00::5' }] }]);
    const cps: Record<string, VduCpModel> = {
      NET2: { cpId: 'NET2', vduId: 'VDU1', order: 1, layerProtocols: [] },
      NET1: { cpId: 'NET1', vduId: 'VDU1', order: 0, layerProtocols: [] },
    };
    assert.deepEqual(podCps(vdu(['NET2', 'NET1']), 'VDU1', cps, p), [{ cpdId: 'NET1', addresses: [{ address: '10.244.1.5' }, { address: 'fd00::5' }] }, { cpdId: 'NET2' }], 'lowest order first');
    assert.deepEqual(podCps(vdu([]), 'VDU1', {}, pod('old', { podIP: '10.244.0.9' })), [{ cpdId: 'VDU1_pod', addresses: [{ address: '10.244.0.9' }] }], 'podIP when podIPs is absent');
    assert.deepEqual(podCps(vdu([]), 'VDU1', {}, pod('pending', { phase: 'Pending' })), [{ cpdId: 'VDU1_pod' }], 'no IP yet');
  });

  test('Services become external CPs with their cluster, external and load-balancer IPs and the pods they select', () => {
    const svc = (name: string, spec: Record<string, unknown>, status: Record<string, unknown> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'ns1' }, spec, status }) as KubeObject;
    const labels = new Map([
      ['web-a', { app: 'web' }],
      ['web-b', { app: 'web' }],
      ['db-0', { app: 'db' }],
    ]);
    const out = serviceExtCps(
      [
        svc('web', { selector: { app: 'web' }, clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], externalIPs: ['192.0.2.7'] }, { loadBalancer: { ingress: [{ ip: '198.51.100.3' }] } }),
        svc('db', { selector: { app: 'db' }, clusterIP: 'None', clusterIPs: ['None'] }),
        svc('external', { type: 'ExternalName', externalName: 'example.com' }),
        svc('nobody', { selector: { app: 'none' }, clusterIP: '10.96.0.11' }),
      ],
      [vnfc('web-b'), vnfc('web-a'), vnfc('db-0')],
      labels,
    );
    assert.deepEqual(out, [
      { id: 'svc-db', cpdId: 'db', resourceId: 'ns1/db', vimLevelResourceType: 'Service', addresses: [], vnfcResourceIds: ['db-0'] },
      {
        id: 'svc-web',
        cpdId: 'web',
        resourceId: 'ns1/web',
        vimLevelResourceType: 'Service',
        addresses: [{ address: '10.96.0.10' }, { address: '192.0.2.7' }, { address: '198.51.100.3' }],
        vnfcResourceIds: ['web-b', 'web-a'],
      },
    ]);
  });
});
