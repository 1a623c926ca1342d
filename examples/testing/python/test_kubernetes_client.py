"""The official Python client against windlass: the way its users write
code (models without `kind`/`apiVersion`, the typed APIs, watches)."""
import threading

from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException


def test_typed_api_round_trip(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    # A model built without kind or apiVersion, as most code builds them.
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="web", labels={"app": "web"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx")]),
    )
    created = core.create_namespaced_pod("default", pod)
    assert created.kind == "Pod" and created.api_version == "v1"
    assert created.spec.containers[0].image_pull_policy == "Always"
    pods = core.list_namespaced_pod("default", label_selector="app=web")
    assert [p.metadata.name for p in pods.items] == ["web"]
    patched = core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"tier": "front"}}})
    assert patched.metadata.labels["tier"] == "front"
    # What every cluster has.
    svc = core.read_namespaced_service("kubernetes", "default")
    assert svc.spec.ports[0].port == 443
    assert core.read_namespaced_service_account("default", "default").metadata.name == "default"
    core.delete_namespaced_pod("web", "default")


def test_deployments_and_watches(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    apps = client.AppsV1Api()
    events = []
    # Watching from the list's resourceVersion sees every change after it,
    # however late the thread starts.
    since = apps.list_namespaced_deployment("default").metadata.resource_version

    def watch_them():
        w = watch.Watch()
        for e in w.stream(apps.list_namespaced_deployment, "default",
                          resource_version=since, timeout_seconds=10):
            events.append((e["type"], e["object"].metadata.name))
            if len(events) == 2:
                w.stop()

    t = threading.Thread(target=watch_them)
    t.start()
    d = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="api"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels={"app": "api"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "api"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="api", image="api:1")]),
            ),
        ),
    )
    apps.create_namespaced_deployment("default", d)
    apps.patch_namespaced_deployment_scale("api", "default", {"spec": {"replicas": 3}})
    t.join(timeout=15)
    assert events == [("ADDED", "api"), ("MODIFIED", "api")]
    assert apps.read_namespaced_deployment("api", "default").spec.replicas == 3


def test_unknown_fields_with_the_dynamic_client(kubeconfig):
    """The typed API checks a body before sending it; the dynamic client
    sends dicts as they are, so the server decides about unknown fields:
    dropped by default, refused under `fieldValidation=Strict`."""
    config.load_kube_config(config_file=kubeconfig)
    cms = dynamic.DynamicClient(client.ApiClient()).resources.get(api_version="v1", kind="ConfigMap")
    body = {"metadata": {"name": "x"}, "data": {"a": "1"}, "bogus": 1}   # no kind, no apiVersion
    try:
        cms.create(body=body, namespace="default", query_params=[("fieldValidation", "Strict")])
        raise AssertionError("accepted an unknown field under Strict")
    except ApiException as e:
        assert e.status == 400, e
        assert 'strict decoding error: unknown field \\"bogus\\"' in e.body, e.body
    created = cms.create(body=body, namespace="default")
    assert created.kind == "ConfigMap" and created.data.a == "1"
    assert "bogus" not in created.to_dict()
