"""A Kopf operator run against windlass, the way one runs it against a
cluster: `kopf run` in its own process, talking to the API server."""
import os
import subprocess
import sys
import time

from kubernetes import client, config, utils

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "greetings.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "greetings", "singular": "greeting", "kind": "Greeting"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"name": {"type": "string"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}


def eventually(what, check, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_the_operator_reconciles_greetings(kubeconfig, tmp_path):
    config.load_kube_config(config_file=kubeconfig)
    api = client.ApiClient()
    utils.create_from_dict(api, CRD)
    operator = os.path.join(os.path.dirname(__file__), "greeting_operator.py")
    log = open(tmp_path / "kopf.log", "w")
    kopf = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", "default", operator],
        env={**os.environ, "KUBECONFIG": kubeconfig},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        custom = client.CustomObjectsApi()
        custom.create_namespaced_custom_object("example.com", "v1", "default", "greetings", {
            "apiVersion": "example.com/v1", "kind": "Greeting",
            "metadata": {"name": "ada"}, "spec": {"name": "Ada"},
        })
        core = client.CoreV1Api()

        def config_map():
            try:
                return core.read_namespaced_config_map("greeting-ada", "default")
            except client.ApiException as e:
                assert e.status == 404, e
                return None

        cm = eventually("the operator's ConfigMap", config_map)
        assert cm.data["message"] == "Hello, Ada!"
        assert cm.metadata.owner_references[0].kind == "Greeting"
        greeting = eventually("the handler's result in the status", lambda: (
            lambda g: g if g.get("status", {}).get("create_fn") else None)(
            custom.get_namespaced_custom_object("example.com", "v1", "default", "greetings", "ada")))
        assert greeting["status"]["create_fn"] == {"configMap": "greeting-ada"}
        # Deleting the Greeting deletes what it owns (garbage collection).
        custom.delete_namespaced_custom_object("example.com", "v1", "default", "greetings", "ada")
        eventually("the ConfigMap to be collected", lambda: config_map() is None)
    finally:
        kopf.terminate()
        kopf.wait(timeout=30)
        log.close()
    assert "Handler 'create_fn' succeeded" in (tmp_path / "kopf.log").read_text()
